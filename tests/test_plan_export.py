"""Plans as data and planned recipes: the committed plans/*.json are what `openrecipes plan export` writes now, and
a planned recipe (`plan --emit-recipe`) validates, dry-runs, is the text the Plan page offers, and is ranked nowhere."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import openrecipes

from openrecipes.catalog.store import load_catalog
from openrecipes.tune.fingerprint import plan_inputs, seal_problem

REPO = Path(__file__).resolve().parents[1]
PLANS = REPO / "plans"


def test_committed_plans_are_current():
    catalog = load_catalog(REPO)
    seals = plan_inputs(catalog)
    # every model with a card and recipes or published entries (the public record's models get Plan pages too)
    with_runs = {e.entry.model for e in catalog.recipes} | {e.entry.model for e in catalog.record if e.entry.published}
    models = with_runs & set(catalog.tables.models)
    assert {p.stem for p in PLANS.glob("*.json")} == models
    for path in PLANS.glob("*.json"):
        assert seal_problem(path.read_text(encoding="utf-8"), seals[path.stem], path.stem) is None, (
            f"{path.name} is stale: run `openrecipes refresh`")


@pytest.fixture(scope="module")
def planned(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("planned") / "qwen3-8b-planned-1.yaml"
    result = openrecipes("plan", "qwen3-8b", "--gpu", "H200", "--gpus", "2", "--emit-recipe", "1", "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert "status: planned, not measured" in result.stdout
    return out


def test_emitted_recipe_is_the_plan_pages_text_and_validates(planned):
    table = next(t for t in json.loads((PLANS / "qwen3-8b.json").read_text())["tables"]
                 if (t["gpu_type"], t["gpus"]) == ("H200", 2))
    offered = next(r["planned_recipe"] for r in table["data"]["rows"] if r["planned_recipe"]
                   and r["planned_recipe"]["rank"] == 1)
    assert planned.read_text() == offered["text"]
    assert "--emit-recipe 1 " in offered["command"]
    text = planned.read_text()
    assert "\nstatus: planned\n" in text and "predicted, not measured" in text
    assert openrecipes("validate", str(planned)).returncode == 0
    dry = openrecipes("run", str(planned), "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "torchrun --nnodes 1 --nproc_per_node 2" in dry.stdout


def test_a_planned_recipe_in_the_catalog_is_ranked_nowhere(planned, tmp_path):
    for folder in ("recipes", "models", "hardware", "runs"):
        shutil.copytree(REPO / folder, tmp_path / folder)
    inside = tmp_path / "recipes/qwen3-8b/h200/planned-1.yaml"
    shutil.copy(planned, inside)
    catalog = load_catalog(tmp_path)
    assert [e.path.name for e in catalog.planned] == ["planned-1.yaml"]
    assert all(e.path.name != "planned-1.yaml" for e in catalog.entries)


def test_emit_errors_are_one_line_exit_2(tmp_path):
    out = tmp_path / "x.yaml"
    no_base = openrecipes("plan", "gpt-oss-20b", "--gpu", "H200", "--gpus", "8", "--engine", "torchtitan",
                          "--emit-recipe", "1", "--out", str(out))
    assert no_base.returncode == 2 and "no torchtitan recipe of gpt-oss-20b" in no_base.stderr
    no_megatron = openrecipes("plan", "qwen3-8b", "--gpu", "H200", "--gpus", "2", "--engine", "megatron",
                              "--emit-recipe", "1", "--out", str(out))
    assert no_megatron.returncode == 2 and "no megatron recipe of qwen3-8b" in no_megatron.stderr
    for extra, message in ((["--grad-reduce-bf16"], "--grad-reduce-bf16 is not torchtitan's"),
                           (["--top", "3"], "--top and --json do not apply"), (["--json"], "--top and --json")):
        refused = openrecipes("plan", "qwen3-8b", "--gpu", "H200", "--gpus", "2", "--emit-recipe", "1",
                              "--out", str(out), *extra)
        assert refused.returncode == 2 and message in refused.stderr, extra
    too_far = openrecipes("plan", "qwen3-8b", "--gpu", "H200", "--gpus", "2", "--emit-recipe", "999", "--out", str(out))
    assert too_far.returncode == 2 and "--emit-recipe 999: choose 1.." in too_far.stderr
    assert openrecipes("plan", "export").returncode == 2
    assert not out.exists()


def test_a_planned_recipe_keeps_its_bases_fields_and_holds_the_prediction():
    import yaml

    from openrecipes.catalog.model import Recipe
    from openrecipes.catalog.store import load_recipe
    from openrecipes.plan.predict import PlanRequest
    from openrecipes.tune.emit import emit_base, planned_recipe, runnable_predictions

    base_path = emit_base("qwen3-8b", "H200", 2, REPO)
    from openrecipes.plan.levers import BF16_SEARCH

    request = PlanRequest("qwen3-8b", "H200", 2, 8192, 16, "torchtitan", search=BF16_SEARCH)
    prediction = runnable_predictions(request, REPO)[1]
    planned = Recipe.model_validate(yaml.safe_load(planned_recipe(base_path, 2, prediction, request, REPO).text))
    base = load_recipe(base_path)
    changed = {"status", "stack", "layout", "result", "correctness", "runs", "run", "reproductions", "notes"}
    assert planned.model_dump(exclude=changed) == base.model_dump(exclude=changed)
    own = {"network", "source"}
    assert planned.stack.model_dump(exclude=own) == base.stack.model_dump(exclude=own)
    figures = {"tokens_per_s_per_gpu", "usd_per_million_tokens", "step_time_cv_percent", "mfu", "gpu_hours",
               "gpu_hours_note", "reference_tokens_per_s_per_gpu", "measured"}
    assert planned.result.model_dump(exclude=figures) == base.result.model_dump(exclude=figures)
    assert planned.result.measured is None and planned.result.step_time_cv_percent is None
    assert planned.reproductions == [] and base.reproductions
    assert planned.result.tokens_per_s_per_gpu == round(prediction.tokens_per_s_per_gpu, 1)
    assert planned.status == "planned" and planned.runs is None
    assert planned.result.reference_tokens_per_s_per_gpu is None
    assert planned.correctness.result == "pending" and planned.correctness.convergence is None
    assert planned.correctness.component_tests == [] and planned.correctness.rules == base.correctness.rules
    assert planned.layout.summary.endswith("(#2 predicted by `openrecipes plan`)")
    assert planned.layout.highlights.startswith("planned: ")


def test_emit_honours_the_workload_and_composes_for_any_gpu_count(tmp_path):
    import yaml

    from openrecipes.catalog.model import Recipe

    out = tmp_path / "gb32.yaml"
    done = openrecipes("plan", "qwen3-8b", "--gpu", "H200", "--gpus", "2", "--global-batch", "32", "--float8", "none",
                       "--emit-recipe", "1", "--out", str(out))
    assert done.returncode == 0, done.stderr
    recipe = Recipe.model_validate(yaml.safe_load(out.read_text()))
    assert recipe.workload.global_batch == 32 and "--training.global_batch_size 32" in recipe.run
    assert recipe.layout.float8 is None and recipe.workload.precision == "bf16"
    assert "--global-batch 32 --emit-recipe 1" in recipe.notes
    # no recipe of Qwen3-8B on 16 GPUs: composed from its 2-GPU recipe, on two 8-GPU nodes, and never with TP (which
    # does not run for Qwen3 on torchtitan 0.2.2)
    wide = tmp_path / "x16.yaml"
    done = openrecipes("plan", "qwen3-8b", "--gpu", "H200", "--gpus", "16", "--emit-recipe", "1", "--out", str(wide))
    assert done.returncode == 0, done.stderr
    recipe = Recipe.model_validate(yaml.safe_load(wide.read_text()))
    assert (recipe.gpu.count, recipe.gpu.per_node, recipe.layout.tp) == (16, 8, 1)
    assert "--nnodes 2 --nproc_per_node 8" in recipe.run and "(its GPUs replaced)" in recipe.notes
