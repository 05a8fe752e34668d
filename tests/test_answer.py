"""`openrecipes answer`: the lines' order, their time and cost for the budget, and every reason nothing is offered,
on the bundled catalog; the planner's part is given (a PredictedPoint) wherever it is not itself the subject."""

from __future__ import annotations

import json

import pytest
from conftest import REPO, openrecipes

from openrecipes.answer.assemble import answer
from openrecipes.answer.live import evidence_of
from openrecipes.answer.model import PredictedLine, PredictedPoint, Question, parse_tokens
from openrecipes.answer.predicted import engines_for, predicted_point
from openrecipes.answer.text import wrapped
from openrecipes.catalog.store import load_catalog
from openrecipes.errors import UserError


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(REPO)


def point(gpu_type: str, gpus: int, *speeds: float) -> PredictedPoint:
    return PredictedPoint(gpu_type=gpu_type, gpus=gpus, not_offered=(), lines=tuple(
        PredictedLine(engine=f"engine{n}", layout="TP1 PP1 DP8 MB1", tokens_per_s_per_gpu=speed, low=speed / 2,
                      high=speed * 2, get="openrecipes plan emit ...") for n, speed in enumerate(speeds)))


def ask(model: str, gpu_type: str, gpus: int, precision: str | None = None, tokens: int = 10**9) -> Question:
    return Question(model=model, gpu_type=gpu_type, gpus=gpus, precision=precision, tokens=tokens)


def test_measured_then_published_then_predicted_each_fastest_first(catalog):
    found = answer(ask("gpt-oss-20b", "H200", 8), catalog, evidence_of(catalog), point("H200", 8, 30_000.0, 20_000.0))
    kinds = [line.kind for line in found.lines]
    assert kinds == sorted(kinds, key=["measured", "published", "predicted"].index)
    assert kinds[0] == "measured" and kinds[-2:] == ["predicted", "predicted"]
    for kind in ("measured", "predicted"):
        speeds = [line.tokens_per_s_per_gpu for line in found.lines if line.kind == kind]
        assert speeds == sorted(speeds, reverse=True)
    measured = found.lines[0]
    assert measured.get.startswith(f"recipes/gpt-oss-20b/h200/{measured.name}.yaml (openrecipes show ")
    assert measured.evidence in ("re-derived", "author-reported")


def test_published_lines_carry_the_sources_caveats_and_precision(catalog):
    found = answer(ask("kimi-k2", "GB300", 256), catalog, evidence_of(catalog), None, "not asked")
    published = [line for line in found.lines if line.kind == "published"]
    assert published and all(line.precision == "MXFP8" for line in published)
    assert any("force-balance the token distribution among experts" in c for line in published for c in line.caveats)


def test_time_and_cost_follow_the_budget_and_the_instance_price(catalog):
    one = answer(ask("qwen3-8b", "H200", 2), catalog, evidence_of(catalog), point("H200", 2, 10_000.0))
    two = answer(ask("qwen3-8b", "H200", 2, tokens=2 * 10**12), catalog, evidence_of(catalog),
                 point("H200", 2, 10_000.0))
    line = one.lines[-1]
    assert line.hours == pytest.approx(1e9 / (10_000 * 2) / 3600)
    assert line.usd == pytest.approx(1e9 / 1e6 * 63.296 / 8 / (10_000 * 3600 / 1e6))  # AWS p5en: $63.296 for 8
    assert two.lines[-1].hours == pytest.approx(line.hours * 2000)
    assert two.lines[-1].usd == pytest.approx(line.usd * 2000)


def test_an_unpriced_gpu_shows_time_says_no_price_and_predicts_only_where_priced(catalog):
    found = answer(ask("llama-3.1-8b", "GB200", 8), catalog, evidence_of(catalog), point("GB200", 8, 9_000.0))
    assert all(line.usd is None and line.hours > 0 for line in found.lines)
    assert any(reason.startswith("no price: ") for reason in found.not_offered)
    live = json.loads(openrecipes("answer", "llama-3.1-8b", "--gpu", "GB200", "--gpus", "8", "--json").stdout)
    assert not [line for line in live["lines"] if line["kind"] == "predicted"]
    assert any("openrecipes plan llama-3.1-8b --gpu GB200 --gpus 8" in r for r in live["not_offered"])


def test_models_states_too_large_do_not_fit_at_once_naming_the_smallest_count(catalog):
    found = predicted_point(catalog, "deepseek-v3", "H100", 8)
    assert found.lines == ()
    assert found.not_offered[0].startswith("does not fit: its weights and gradients alone")
    assert found.not_offered[0].endswith("the smallest count that could hold them is 64")


def test_engines_run_a_model_only_where_its_card_names_their_model(catalog):
    running, reasons = engines_for(catalog.tables.models["deepseek-v3"])
    assert [engine.name for engine in running] == ["megatron"]
    assert reasons and "no torchtitan model named in the card of deepseek-v3" in reasons[0]
    assert len(engines_for(catalog.tables.models["qwen3-8b"])[0]) == 2


def test_a_precision_without_a_peak_or_beyond_bf16_is_not_predicted_and_says_why(catalog):
    no_peak = answer(ask("qwen3-4b", "A100", 1, "FP8"), catalog, evidence_of(catalog), point("A100", 1, 1.0))
    assert not no_peak.lines and no_peak.not_offered[0].startswith("no FP8 peak for A100-SXM4-80GB")
    fp8 = answer(ask("qwen3-0.6b", "H200", 1, "FP8"), catalog, evidence_of(catalog), point("H200", 1, 1.0))
    assert {line.kind for line in fp8.lines} == {"measured"} and all(line.precision == "FP8" for line in fp8.lines)
    assert fp8.not_offered[0].startswith("predicted: the answer predicts BF16 only")


@pytest.mark.parametrize("text, tokens", [("1B", 10**9), ("500M", 5 * 10**8), ("2T", 2 * 10**12), ("1.5b", 1.5e9),
                                          ("12345", 12345)])
def test_token_budgets_read_as_written(text, tokens):
    assert parse_tokens(text) == tokens


@pytest.mark.parametrize("args, said", [
    (("--tokens", "lots"), "--tokens lots: give a token count such as 1B, 500M or 2T"),
    (("--gpus", "0"), "--gpus 0: give 1 to 8,192 GPUs"),
    (("--precision", "fp4"), "--precision fp4: use BF16, FP8, MXFP8, NVFP4"),
])
def test_bad_input_is_exit_2_with_one_line(args, said):
    given = {"--gpus": "2", **dict(zip(args[::2], args[1::2], strict=True))}
    done = openrecipes("answer", "qwen3-8b", "--gpu", "H800", *[w for kv in given.items() for w in kv])
    assert done.returncode == 2 and said in done.stderr and len(done.stderr.strip().splitlines()) == 1
    with pytest.raises(UserError):
        parse_tokens("0")


def test_the_terminal_answer_reads_at_80_columns(catalog):
    done = openrecipes("answer", "llama-3.1-8b", "--gpu", "GB200", "--gpus", "8", columns=80)
    assert done.returncode == 0
    lines = done.stdout.splitlines()
    assert lines[0] == "llama-3.1-8b on 8 x GB200, 1B tokens:"
    assert all(len(line) <= 80 or " " not in line.strip() for line in lines)
    found = answer(ask("llama-3.1-8b", "GB200", 8), catalog, evidence_of(catalog), None, "x")
    assert wrapped(found, 80).count("\n1. ") == (1 if found.lines else 0)


@pytest.mark.parametrize("value, decimals, shown", [(14848.5, 0, "14,849"), (1.005, 2, "1.01"), (2.5, 0, "3"),
                                                    (1234567.25, 1, "1,234,567.3"), (0.125, 2, "0.13")])
def test_numbers_round_as_the_browser_rounds_them(value, decimals, shown):
    """Python's format rounds a tie to even (14,848); the page's toLocaleString away from zero: the two faces would
    differ by one in the last digit."""
    from openrecipes.figures import number_text as number

    assert number(value, decimals) == shown


@pytest.mark.slow
def test_a_predicted_lines_emit_command_writes_that_layout(catalog, tmp_path):
    lines = predicted_point(catalog, "qwen3-1.7b", "H100", 1).lines
    line = next(p for p in lines if p.get.startswith("openrecipes plan emit"))
    words = line.get.split()
    words[words.index("--out") + 1] = str(tmp_path / "planned.yaml")
    done = openrecipes(*words[1:])
    assert done.returncode == 0, done.stderr
    assert f"predicted {line.tokens_per_s_per_gpu:,.1f} tokens/s per GPU" in done.stdout
    assert line.layout.split(" MB")[0] in (tmp_path / "planned.yaml").read_text()
