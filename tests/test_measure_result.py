"""The result block from raw logs: the seeds' published figures come back; every bad input is a one-line error."""

from __future__ import annotations

import dataclasses
import shutil
from datetime import date

import pytest
import yaml
from conftest import GPTOSS_1, REPO, examples
from hypothesis import given, settings
from hypothesis import strategies as st

from openrecipes.errors import UserError
from openrecipes.measure.result import RunInputs, inputs_from_recipe, measure, read_run
from openrecipes.measure.write import replace_result_fields, write_result

LOGS = REPO / "tests/fixtures/logs"
SLIME_GPTOSS_1 = LOGS / "slime-gpt-oss-20b-attune-tp1-pp1-ep4.log"
MEGATRON_GLM_2 = LOGS / "megatron-glm-5.2-attune-tp4-pp2-cp4-mt12k.log"
GLM_12K = REPO / "recipes/glm-5.2-744b-a40b/b200/attune-tp4-pp2-cp4-mt12k.yaml"
PUBLISHED = ("tokens_per_s_per_gpu", "usd_per_million_tokens", "step_time_cv_percent", "mfu", "window_tokens",
             "gpu_hours", "steps_per_run", "measured")

# A three-step run on 2 GPUs, 4 rows of 8 tokens per step: small numbers to check the arithmetic by hand.
TINY = RunInputs(gpus=2, global_batch=4, row_tokens=8, active_params=1000, peak_flops_per_gpu=1e9,
                 usd_per_gpu_hour=3.6, steps_per_run=3, window=(1, 2))


def _published(recipe_path):
    result = yaml.safe_load(recipe_path.read_text())["result"]
    return {name: str(result[name]) if name == "measured" else result[name] for name in PUBLISHED} | {
        "window": result["window"]}


@pytest.mark.parametrize("log, recipe", [(SLIME_GPTOSS_1, GPTOSS_1), (MEGATRON_GLM_2, GLM_12K)])
def test_result_block_equals_the_seeds_published_figures(log, recipe):
    result = measure(read_run([log]), inputs_from_recipe(recipe), None).as_json()
    assert {name: result[name] for name in (*PUBLISHED, "window")} == _published(recipe)


def test_window_is_inclusive_and_numbered_from_0(tmp_path):
    log = tmp_path / "run.jsonl"
    log.write_text("".join(f'{{"step": {s}, "step_time_s": {t}, "loss": 1.0}}\n' for s, t in enumerate([9, 2, 4])))
    result = measure(read_run([log]), TINY, None).as_json()
    # Steps 1 and 2: 2 steps x 4 rows x 8 tokens = 64 tokens in 6 s on 2 GPUs.
    assert result["window_tokens"] == 64
    assert result["tokens_per_s_per_gpu"] == round(64 / 6 / 2, 2)
    assert result["window_seconds"] == 6
    assert measure(read_run([log]), TINY, (0, 2)).window_seconds == 15


def test_without_a_recipe_only_log_figures(tmp_path):
    result = measure(read_run([LOGS / "torchtitan-0.2.2-qwen3-8b-fsdp2-2xh200.log"]), None, (1, 24))
    assert result.tokens_per_s_per_gpu is None and result.step_time_cv_percent > 0
    assert result.steps_per_run == 25 and result.log_format == "torchtitan"


def _jsonl(tmp_path, rows):
    log = tmp_path / "run.jsonl"
    log.write_text("".join(rows))
    return log


@pytest.mark.parametrize("rows, window, message", [
    (['{"step": 0, "step_time_s": 1, "loss": NaN}\n', '{"step": 1, "step_time_s": 1, "loss": 1}\n',
      '{"step": 2, "step_time_s": 1, "loss": 1}\n'], None, "loss = nan"),
    (['{"step": 0, "step_time_s": 1, "loss": 1}\n', '{"step": 1, "step_time_s": Infinity, "loss": 1}\n',
      '{"step": 2, "step_time_s": 1, "loss": 1}\n'], None, "step_time_s = inf"),
    (['{"step": 0, "step_time_s": 1, "loss": 1}\n', '{"step": 1, "step_time_s": 1, "loss": 1}\n',
      '{"step": 1, "step_time_s": 1, "loss": 1}\n', '{"step": 2, "step_time_s": 1, "loss": 1}\n'], None,
     "step 1 is also at"),
    (['{"step": 0, "step_time_s": 1, "loss": 1}\n', '{"step": 2, "step_time_s": 1, "loss": 1}\n'], None,
     "steps 1 are missing"),
    (['{"step": 0, "step_time_s": 1, "loss": 1}\n', '{"step": 1, "step_time_s": 1, "loss": 1}\n'], None,
     "the log ends at step 1 but the run has 3 steps"),
    (['{"step": 0, "step_time_s": 1, "loss": 1}\n', '{"step": 1, "step_time_s": 1, "loss": 1}\n',
      '{"step": 2, "step_time_s": 1, "loss": 1}\n'], (1, 3), r"window \[1, 3\] is outside the run's steps 0-2"),
    (['{"step": 0, "step_time_s": 1, "loss": 1}\n', '{"step": 1, "step_time_s": 1, "loss": 1}\n',
      '{"step": 2, "step_time_s": 1, "loss": 1}\n'], (2, 1), "ends before it starts"),
    (['{"step": 0, "step_time_s": 1, "loss": 1}\n', '{"step": 1, "loss": 1}\n',
      '{"step": 2, "step_time_s": 1, "loss": 1}\n'], None, "step 1 has no step time"),
])
def test_bad_runs_are_one_line_user_errors(tmp_path, rows, window, message):
    with pytest.raises(UserError, match=message) as error:
        measure(read_run([_jsonl(tmp_path, rows)]), TINY, window)
    assert "\n" not in str(error.value)


def test_truncated_megatron_log_is_refused(tmp_path):
    lines = MEGATRON_GLM_2.read_text().splitlines()
    cut = tmp_path / "cut.log"
    cut.write_text("\n".join(lines[:12]) + "\n")  # iterations 1-8 of 14
    with pytest.raises(UserError, match="the log ends at step 7 but the run has 14 steps"):
        measure(read_run([cut]), None, (4, 6))


def test_logs_split_over_files_merge(tmp_path):
    lines = SLIME_GPTOSS_1.read_text().splitlines()
    first, second = tmp_path / "part1.log", tmp_path / "part2.log"
    first.write_text("\n".join(lines[:20]) + "\n")
    second.write_text("\n".join(lines[20:]) + "\n")
    whole = measure(read_run([SLIME_GPTOSS_1]), inputs_from_recipe(GPTOSS_1), None)
    assert measure(read_run([first, second]), inputs_from_recipe(GPTOSS_1), None) == whole


def test_write_restores_the_seed_byte_for_byte(tmp_path):
    recipe = tmp_path / "recipe.yaml"
    stale = GPTOSS_1.read_text().replace("tokens_per_s_per_gpu: 10483.91", "tokens_per_s_per_gpu: 9000.5")
    stale = stale.replace("step_time_cv_percent: 1.71", "step_time_cv_percent: 3.0").replace("  - 5\n", "  - 3\n")
    recipe.write_text(stale)
    result = measure(read_run([SLIME_GPTOSS_1]), inputs_from_recipe(recipe), (5, 19))
    written = write_result(recipe, result)
    assert "tokens_per_s_per_gpu" in written and "window" in written
    assert recipe.read_text() == GPTOSS_1.read_text()
    assert not list(tmp_path.glob(".*.tmp"))


def test_write_that_would_not_validate_leaves_the_recipe_unchanged(tmp_path):
    recipe = tmp_path / "recipe.yaml"
    shutil.copy(GPTOSS_1, recipe)
    result = measure(read_run([SLIME_GPTOSS_1]), inputs_from_recipe(recipe), None)
    with pytest.raises(UserError, match="left unchanged"):
        write_result(recipe, dataclasses.replace(result, window_tokens=123))
    assert recipe.read_text() == GPTOSS_1.read_text()


def test_replace_keeps_comments_and_flow_windows():
    text = "a: 1\nresult:\n  mfu: 0.1  # published\n  window: [0, 3]\n  other: x\nnext: 2\n"
    updated = replace_result_fields(text, {"mfu": 0.25, "window": [1, 2], "gpu_hours": 3.0})
    assert updated == ("a: 1\nresult:\n  mfu: 0.25  # published\n  window: [1, 2]\n  other: x\n  gpu_hours: 3.0\n"
                       "next: 2\n")


@settings(max_examples=examples(60), deadline=None)
@given(
    tokens=st.floats(min_value=0.01, max_value=1e6), mfu=st.floats(min_value=1e-6, max_value=0.99),
    first=st.integers(0, 50), length=st.integers(1, 50), day=st.dates(date(2020, 1, 1), date(2030, 12, 31)),
)
def test_replace_reads_back_and_touches_nothing_else(tokens, mfu, first, length, day):
    text = GPTOSS_1.read_text()
    values = {"tokens_per_s_per_gpu": round(tokens, 2), "mfu": round(mfu, 4), "window": [first, first + length],
              "measured": day.isoformat()}
    updated = replace_result_fields(text, values)
    before, after = yaml.safe_load(text), yaml.safe_load(updated)
    assert {name: after["result"][name] for name in ("tokens_per_s_per_gpu", "mfu", "window")} == {
        name: values[name] for name in ("tokens_per_s_per_gpu", "mfu", "window")}
    assert after["result"]["measured"] == day
    assert {k: v for k, v in after.items() if k != "result"} == {k: v for k, v in before.items() if k != "result"}
    assert len(updated.splitlines()) == len(text.splitlines())


def test_recipe_that_cannot_give_inputs_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="published summary"):
        inputs_from_recipe(REPO / "recipes/gpt-oss-20b/h100/published-summary.yaml")
    broken = tmp_path / "recipe.yaml"
    broken.write_text(GPTOSS_1.read_text().replace("  count: 8\n", "  count: eight\n", 1))
    with pytest.raises(UserError, match="gpu.count"):
        inputs_from_recipe(broken)


def test_a_forks_own_instance_prices_are_measured_and_validated(tmp_path):
    # A fork's catalog with its own hardware/instances.yaml (the H200 instance at twice the price): the recipe in
    # it is priced from that table, and --write validates the new text against the same table.
    shutil.copytree(REPO / "hardware", tmp_path / "hardware")
    prices = tmp_path / "hardware/instances.yaml"
    prices.write_text(prices.read_text().replace("usd_per_hour: 63.296", "usd_per_hour: 126.592"))
    recipe = tmp_path / "recipes/gpt-oss-20b/h200/recipe.yaml"
    recipe.parent.mkdir(parents=True)
    shutil.copy(GPTOSS_1, recipe)
    inputs = inputs_from_recipe(recipe)
    assert inputs.usd_per_gpu_hour == pytest.approx(126.592 / 8)
    result = measure(read_run([SLIME_GPTOSS_1]), inputs, None)
    published = _published(GPTOSS_1)["usd_per_million_tokens"]
    assert result.usd_per_million_tokens == pytest.approx(2 * published, abs=0.01)
    assert "usd_per_million_tokens" in write_result(recipe, result)
    assert f"usd_per_million_tokens: {result.usd_per_million_tokens}" in recipe.read_text()


def _torchtitan_log(tmp_path, last_step: int, ran_out_of_data: bool):
    """A 12-step torchtitan run's log holding steps 1..last_step, one second apart, optionally ending as torchtitan
    does when its dataloader runs dry."""
    prefix = "[titan] 2026-12-01 02:53:{:02d},000 - root - "
    lines = [prefix.format(0) + "INFO - Trainer is initialized with local batch size 1, global batch size 4, "
             "gradient accumulation steps 4, sequence length 8192, total steps 12 (warmup 2)",
             prefix.format(0) + "INFO - Training starts at step 1"]
    lines += [prefix.format(n) + f"INFO - step: {n:2d}  loss: 7.5  grad_norm: 1.2  memory: 67.60GiB(48.36%)  "
              "tps: 32,000  tflops: 265.10  mfu: 26.81%" for n in range(1, last_step + 1)]
    if ran_out_of_data:
        lines += [prefix.format(last_step) + "WARNING - Ran out of data; last step was canceled.",
                  prefix.format(last_step + 2) + "INFO - Training completed"]
    log = tmp_path / "train.log"
    log.write_text("\n".join(lines) + "\n")
    return log


def test_a_torchtitan_run_that_ran_out_of_data_ends_at_its_last_step(tmp_path):
    log = _torchtitan_log(tmp_path, 6, ran_out_of_data=True)
    measured = measure(read_run([log]), None, (2, 5))
    assert measured.steps_per_run == 6 and measured.window_seconds == pytest.approx(4.0)
    assert measured.ended_early == f"the data ran out: 6 of the 12 planned steps ran (steps 0-5; {log}:9)"
    with_recipe = measure(read_run([log]), dataclasses.replace(TINY, steps_per_run=12), (2, 5))
    assert with_recipe.steps_per_run == 6 and "6 of the 12 planned steps" in with_recipe.ended_early


def test_a_torchtitan_log_that_simply_stops_is_still_truncated(tmp_path):
    log = _torchtitan_log(tmp_path, 6, ran_out_of_data=False)
    with pytest.raises(UserError, match="the log ends at step 5 but the run has 12 steps"):
        measure(read_run([log]), None, (2, 5))


def test_a_complete_run_carries_no_ended_early_note(tmp_path):
    assert measure(read_run([_torchtitan_log(tmp_path, 12, ran_out_of_data=False)]), None, (2, 5)).ended_early is None
