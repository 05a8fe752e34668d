"""`plan` searches every lever our recipes use, says which engine it answers for, never answers below a measured
recipe, and shows a published figure that disagrees with it."""

from __future__ import annotations

from dataclasses import replace

import pytest
from conftest import REPO, openrecipes
from layout_helpers import built, relaid

from openrecipes.catalog.model import KERNELS
from openrecipes.catalog.paths import default_catalog_root
from openrecipes.catalog.store import load_catalog
from openrecipes.errors import UserError
from openrecipes.plan.answer import PublishedFigure, default_engine, default_workload, measured_recipes, widened
from openrecipes.plan.levers import LeverSearch
from openrecipes.plan.predict import PlanRequest, predict
from openrecipes.plan.trust import Interval
from openrecipes.plan.words import LEVER_WORDS, lever_names, lever_slug, lever_text

BF16 = LeverSearch(float8="none")


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(default_catalog_root())


@pytest.mark.parametrize(("model", "gpus"), [("qwen3-1.7b", 1), ("qwen3-4b", 1), ("qwen3-8b", 2)])
def test_best_bf16_layout_is_within_5_percent_of_the_best_measured_recipe(catalog, model, gpus):
    """Predicted, not copied: the planner's best fitting BF16 layout against the catalog's best measured BF16 recipe
    of the same model, GPUs and workload (before the levers were searched: -29%, -31%, -7%)."""
    request = PlanRequest(model, "H200", gpus, 8192, 16, "torchtitan", search=BF16)
    best = next(p for p in predict(request) if p.fits)
    measured = measured_recipes(catalog, request)
    assert measured and best.tokens_per_s_per_gpu >= 0.95 * measured[0].tokens_per_s_per_gpu
    assert best.layout.levers.compile and best.layout.recompute == "none" and not best.layout.levers.float8


def test_a_measured_recipe_answers_only_a_request_of_its_precision(catalog):
    """A BF16 plan lists no FP8 recipe as measured, an FP8 plan no BF16 one; `--float8 measured` plans both."""
    bf16 = PlanRequest("qwen3-1.7b", "H200", 1, 8192, 16, "torchtitan", search=BF16)
    found = {m.slug: m.layout.levers.float8 for m in measured_recipes(catalog, bf16)}
    assert found and set(found.values()) == {None}
    fp8 = {m.layout.levers.float8 for m in measured_recipes(catalog, replace(bf16, float8="tensorwise"))}
    assert fp8 == {"tensorwise"}
    measured = replace(bf16, search=LeverSearch(float8="measured"))
    both = {m.layout.levers.float8 for m in measured_recipes(catalog, measured)}
    assert both == {None, "tensorwise"}
    assert not measured_recipes(catalog, replace(bf16, float8="rowwise"))


def test_every_lever_is_spelled_one_way_in_names_tables_and_slugs():
    layout = built("torchtitan", 1, 1, 1, 1, 1, 1, 8, (36,), "none", 1, 8192, kernels=KERNELS,
                   attention="sdpa-flash", float8="tensorwise")
    assert lever_names(layout.levers)[-2:] == ("attention sdpa-flash", "float8 tensorwise")
    assert lever_text(layout.levers) == ", liger rmsnorm+swiglu+rope+flce, sdpa-flash, fp8 tensorwise"
    assert lever_slug(layout.levers) == "-liger-rmsnorm+swiglu+rope+flce-sdpa-flash-fp8-tensorwise"
    assert len({words.name for words in LEVER_WORDS}) == len({words.short for words in LEVER_WORDS}) == len(
        LEVER_WORDS)


def test_megatron_precision_is_timed_at_its_peak():
    """`plan --precision fp8` runs every block GEMM at the FP8 peak (with its fitted residual): faster than BF16, never
    by more than the tensor cores' FP8/BF16 ratio; MXFP8 and NVFP4 only where the GPU type has them."""
    bf16 = PlanRequest("llama-3.1-70b", "H100", 64, 8192, 128, "megatron")
    fp8 = replace(bf16, low_precision="fp8")
    best_bf16 = next(p for p in predict(bf16) if p.fits)
    same = next(p for p in predict(fp8) if p.layout == relaid(best_bf16.layout, low_precision="fp8"))
    assert 1.2 < same.tokens_per_s_per_gpu / best_bf16.tokens_per_s_per_gpu < 2.0
    assert "fp8" in lever_text(same.layout.levers) and same.exported().low_precision == "fp8"
    with pytest.raises(UserError, match="H100-SXM5-80GB has no dense nvfp4 peak; .* add peak_nvfp4_flops to its block"):
        predict(replace(bf16, low_precision="nvfp4"))
    with pytest.raises(UserError, match="--precision fp4: not one of"):
        predict(replace(bf16, low_precision="fp4"))
    with pytest.raises(UserError, match="torchtitan's FP8 is --float8"):
        predict(replace(bf16, engine="torchtitan", low_precision="fp8"))


def test_the_default_workload_is_the_recipes_one_for_every_engine(catalog):
    """One answer compares engines on one workload: Qwen3-8B's torchtitan recipes run 16 rows of 8,192 tokens, so a
    Megatron plan of it does too; a model without a recipe plans 8,192 x 128."""
    workload = default_workload(catalog, "qwen3-8b")
    assert (workload.row_tokens, workload.global_batch) == (8192, 16)
    assert workload.reason == "the workload of 2 of its recipes"
    assert (default_workload(catalog, "deepseek-v3").row_tokens, default_workload(catalog, "deepseek-v3").global_batch
            ) == (8192, 128)
    text = " ".join(openrecipes("plan", "qwen3-8b", "--gpu", "H200", "--gpus", "8", "--engine", "megatron", "--top",
                                "1").stdout.split())
    assert "the workload of 2 of its recipes" in text and "global batch 16" in text


def test_default_engine_is_the_one_that_runs_the_model_here(catalog):
    assert default_engine(catalog, "qwen3-8b").engine == "torchtitan"
    assert default_engine(catalog, "gpt-oss-20b").engine == "megatron"
    result = openrecipes("plan", "qwen3-8b", "--gpu", "H200", "--gpus", "2", "--top", "3", "--float8", "none")
    assert result.returncode == 0, result.stderr
    text = " ".join(result.stdout.split())
    assert "torchtitan (torchtitan runs 2 of the catalog's 2 measured recipe(s) of qwen3-8b" in text
    assert "global batch 16" in text  # the workload of its recipes
    # where a measured recipe beats the best prediction it is listed first, marked measured: Qwen3-1.7B's 40,507
    result = openrecipes("plan", "qwen3-1.7b", "--gpu", "H200", "--gpus", "1", "--top", "3", "--float8", "none")
    assert result.returncode == 0, result.stderr
    rows = [row.split("│") for row in result.stdout.splitlines() if row.startswith("│") and row.split("│")[1].strip()]
    assert rows[0][1].strip() == "M" and "measured" in rows[0][-2]
    assert any(row[1].strip() == "M" and "40,506.8" in "│".join(row) for row in rows)


def test_the_table_is_readable_at_80_columns():
    from typer.testing import CliRunner

    from openrecipes.cli import app

    result = CliRunner().invoke(app, ["plan", "qwen3-1.7b", "--gpu", "H200", "--gpus", "1", "--top", "3", "--float8",
                                      "measured"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert max(len(line) for line in lines) <= 80 and "…" not in result.output
    header = next(line for line in lines if "tok/s/GPU" in line)  # the narrow columns, the others named below
    assert "MFU" not in header and "Left out at 80 columns: Tokens/GPU, Headroom, MFU, $/1M" in result.output
    assert "fp8-tensorwise" in result.output  # each row names its levers


def test_a_disagreeing_published_figure_widens_the_range():
    interval = Interval(409.0, 549.0, "held-out", True)
    figure = PublishedFigure("seed page", 161.8, 471.0 / 161.8)
    wide = widened(interval, 471.0, [figure])
    assert wide.low == pytest.approx(161.8, abs=0.1) and wide.high == 549.0 and not wide.constrained
    assert "161.8 published (seed page)" in wide.basis
    agreeing = PublishedFigure("seed page", 470.0, 471.0 / 470.0)
    assert widened(interval, 471.0, [agreeing]) == interval


def test_offload_fractions_after_the_first_that_fits_are_left_out():
    ranked = predict(PlanRequest("gpt-oss-20b", "H200", 8, 8192, 128, "megatron"))
    fitting: dict = {}
    for p in ranked:
        if p.fits:
            key = relaid(p.layout, offload_fraction=0.0)
            fitting.setdefault(key, []).append(p.layout.levers.offload_fraction)
    assert fitting and all(len(fractions) == 1 for fractions in fitting.values())
    # a layout that does not fit without offload still has its offloaded fractions
    assert any(p.layout.levers.offload_fraction > 0 and p.fits for p in ranked)


@pytest.mark.slow
def test_glm_on_128_h200_shows_the_published_figure():
    result = openrecipes("plan", "GLM-5.2-744B-A40B", "--gpu", "H200", "--gpus", "128", "--top", "1")
    assert result.returncode == 0, result.stderr
    text = " ".join(result.stdout.split())
    assert "published: 161.8 tokens/s per GPU for GLM-5.2-744B-A40B on 128 x H200" in text
    assert "every range is widened to hold it" in text


def test_a_stale_heldout_file_stops_plan_with_one_line(monkeypatch):
    from openrecipes.plan import trust

    edited = {**trust.stored(), "inputs": {**trust.stored()["inputs"], "calibration.yaml": "0" * 64}}
    monkeypatch.setattr(trust, "stored", lambda: edited)
    result = openrecipes("plan", "qwen3-8b", "--gpu", "H200", "--gpus", "2")
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
    assert "heldout.json: written for another src/openrecipes/plan/calibration.yaml" in result.stderr
    assert "run `openrecipes refresh`" in result.stderr


def test_the_example_in_docs_planning_is_the_programs_output():
    """docs/planning.md shows `COLUMNS=80 openrecipes plan qwen3-8b --gpu H200 --gpus 2 --top 3`
    exactly as the program prints it (re-run it and paste the output after a change)."""
    from typer.testing import CliRunner

    from openrecipes.cli import app

    command = "COLUMNS=80 openrecipes plan qwen3-8b --gpu H200 --gpus 2 --top 3"
    page = (REPO / "docs/planning.md").read_text(encoding="utf-8")
    shown = page.split(f"$ {command}\n", 1)[1].split("\n```", 1)[0]
    result = CliRunner().invoke(app, command.split()[1:][1:], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert [line.rstrip() for line in result.output.rstrip().splitlines()] == [
        line.rstrip() for line in shown.splitlines()]
