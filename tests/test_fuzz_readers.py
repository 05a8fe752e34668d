"""Hypothesis against the readers of stranger-supplied files: logs, loss-curve CSVs, loss curves, recipes.
Whatever the input, the reader gives a result or a UserError (never another exception), and a result is sound:
every measured figure finite, every step time positive, and a convergence verdict that passes has finite figures.
"""

from __future__ import annotations

import json
import math

import yaml
from conftest import GPTOSS_1, examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openrecipes.catalog.validate import validate_file
from openrecipes.errors import UserError
from openrecipes.jsonout import json_text
from openrecipes.measure.result import measure, read_run
from openrecipes.verify.convergence import check_convergence, read_curve

SETTINGS = settings(max_examples=examples(150), deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])

# Numbers as a log or CSV may write them, the hostile ones over-represented.
number_text = st.one_of(
    st.sampled_from(["0", "-0", "-1", "nan", "NaN", "inf", "-inf", "Infinity", "1e308", "-1e308", "1e400", "1e-320",
                     "9" * 40, "", "x", "1,5", "0x10", "1_0", " 3 "]),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(-10**6, 10**6).map(str),
)


def _megatron_line(step: int, elapsed: str, loss: str) -> str:
    return (f" [2026-10-20 08:00:{step % 60:02d}] iteration {step:8d}/ 8 | "
            f"elapsed time per iteration (ms): {elapsed} | lm loss: {loss} | grad norm: 1.0 |")


def _jsonl_line(step: int, elapsed: str, loss: str) -> str:
    return f'{{"step": {step - 1}, "step_time_s": {elapsed or "null"}, "loss": {loss or "null"}}}'


def _torchtitan_line(step: int, elapsed: str, loss: str) -> str:
    second = abs(hash(elapsed)) % 60
    return f"[rank0]:[titan] 2026-11-30 01:{step % 60:02d}:{second:02d},000 - root - INFO - step: {step}  loss: {loss}"


log_lines = st.lists(st.tuples(st.integers(0, 10), number_text, number_text), min_size=0, max_size=12)


@SETTINGS
@given(make=st.sampled_from([_megatron_line, _jsonl_line, _torchtitan_line]), rows=log_lines,
       noise=st.lists(st.text(max_size=40), max_size=3), window=st.tuples(st.integers(0, 8), st.integers(0, 8)))
def test_any_log_is_measured_soundly_or_refused(tmp_path, make, rows, noise, window):
    path = tmp_path / ("run.jsonl" if make is _jsonl_line else "run.log")
    start = ["[rank0]:[titan] 2026-11-30 00:59:00,000 - root - INFO - Training starts at step 1"] \
        if make is _torchtitan_line else []
    path.write_text("\n".join(start + [make(*row) for row in rows] + noise) + "\n", encoding="utf-8")
    try:
        result = measure(read_run([path]), None, window)
    except UserError as error:
        assert str(error) and "\n" not in str(error)
        return
    assert math.isfinite(result["step_time_cv_percent"]) and result["window_seconds"] > 0
    json.loads(json_text(result))


csv_rows = st.lists(st.tuples(st.one_of(st.integers(-3, 40).map(str), number_text), number_text), max_size=30)


@SETTINGS
@given(rows=csv_rows, header=st.sampled_from(["step,loss", "loss,step", "Step , LOSS", "a,b", ""]))
def test_any_csv_is_read_or_refused(tmp_path, rows, header):
    path = tmp_path / "curve.csv"
    path.write_text("\n".join([header, *(",".join(row) for row in rows)]) + "\n", encoding="utf-8")
    try:
        curve = read_curve(path)
    except UserError as error:
        assert str(error) and "\n" not in str(error)
        return
    assert all(isinstance(step, int) and isinstance(loss, float) for step, loss in curve.items())


losses = st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                   st.floats(min_value=-1.7e308, max_value=1.7e308), st.sampled_from([1e308, -1e308, 5e-324, 0.0]))
curves = st.dictionaries(st.integers(0, 40), losses, max_size=40)


@settings(max_examples=examples(400), deadline=None)
@given(candidate=curves, reference=curves)
def test_a_convergence_verdict_that_passes_has_only_finite_figures(candidate, reference):
    verdict = check_convergence(candidate, reference)
    json.loads(json_text(verdict))  # strict JSON: no NaN or Infinity ever printed
    if verdict["passed"]:
        assert math.isfinite(verdict["correlation"]) and verdict["correlation"] >= 0.95
        assert math.isfinite(verdict["final_loss_difference"]) and verdict["final_loss_difference"] <= 0.05
        assert all(math.isfinite(v) for v in candidate.values()) and all(math.isfinite(v) for v in reference.values())


@settings(max_examples=examples(300), deadline=None)
@given(scale=st.floats(min_value=1e-300, max_value=1e300), sign=st.sampled_from([1, -1]),
       base=st.lists(st.floats(min_value=0.5, max_value=3.0), min_size=10, max_size=30))
def test_anti_correlated_curves_fail_at_any_scale(scale, sign, base):
    candidate = {i: sign * scale * value for i, value in enumerate(base)}
    reference = {i: sign * scale * (4.0 - value) for i, value in enumerate(base)}
    if len(set(base)) > 2:
        assert not check_convergence(candidate, reference)["passed"]


SEED = yaml.safe_load(GPTOSS_1.read_text(encoding="utf-8"))
YAML_11 = [".inf", "-.inf", ".nan", "0x1F", "0o17", "017", "1:30", "1_000", "2026-01-01", "yes", "off", "~",
           "9" * 400, "1.0e+400", "!!float 1", "&a 1", "*a", "[]", "{}", "''"]
NUMERIC = [("gpu", "count"), ("workload", "global_batch"), ("layout", "tp"), ("result", "tokens_per_s_per_gpu"),
           ("result", "mfu"), ("result", "gpu_hours"), ("result", "steps_per_run"), ("layout", "max_tokens_per_gpu")]


@SETTINGS
@given(field=st.sampled_from(NUMERIC), token=st.sampled_from(YAML_11))
def test_yaml_11_surprises_in_number_fields_are_errors_naming_the_field(tmp_path, field, token):
    data = json.loads(json.dumps(SEED, default=str))
    data[field[0]][field[1]] = "__VALUE__"
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False, width=1000).replace("'__VALUE__'", token)
                    .replace("__VALUE__", token), encoding="utf-8")
    report = validate_file(path)
    assert not report.ok
    named = ".".join(field)
    assert report.unreadable or any(e.field.startswith(named) or named in e.message for e in report.errors), \
        [(e.field, e.message) for e in report.errors]
