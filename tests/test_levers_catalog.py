"""Kernels, attention backend and float8 as recipe fields: schema, rendering into the torchtitan run, the validator
reading them back from the run, and the configuration check's classes."""

from __future__ import annotations

import copy

import jsonschema
import pytest
import yaml
from conftest import REPO, load_seed, write_recipe

from openrecipes.catalog.command import parse_run
from openrecipes.catalog.hardware import load_reference_tables
from openrecipes.catalog.model import KERNELS, Recipe
from openrecipes.catalog.schema import recipe_json_schema
from openrecipes.catalog.validate import validate_file
from openrecipes.engines.torchtitan.runner import compose, render
from openrecipes.errors import UserError
from openrecipes.verify.config import check_config

QWEN3_8B = REPO / "recipes/qwen3-8b/h200/openrecipes-fsdp2-compile-noac-mb1.yaml"
FP8 = {"scaling": "tensorwise", "fsdp_float8_all_gather": True, "precomputed_scales": True, "skip": ["output"]}


def variant(*, kernels=(), attention=None, float8=None) -> dict:
    """The Qwen3-8B recipe with the given levers, its run re-rendered from its fields."""
    data = copy.deepcopy(load_seed(QWEN3_8B))
    data["layout"].update(kernels=list(kernels), attention=attention, float8=float8)
    data["workload"]["precision"] = "fp8" if float8 else "bf16"
    data["runs"], data["reproductions"] = None, []
    recipe = Recipe.model_validate(data)
    card = load_reference_tables().models[recipe.model]
    data["run"] = compose(recipe, card, parse_run(load_seed(QWEN3_8B)["run"])).script()
    return data


def write(tmp_path, data, name="recipe.yaml"):
    path = tmp_path / "recipes" / "qwen3-8b" / "h200" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    written = write_recipe(tmp_path, data, name)
    path.write_text(written.read_text())
    return path


def errors_of(tmp_path, data) -> dict[str, str]:
    return {e.field: e.message for e in validate_file(write(tmp_path, data)).errors}


def test_existing_recipes_default_to_no_levers():
    recipe = Recipe.model_validate(load_seed(QWEN3_8B))
    assert (recipe.layout.kernels, recipe.layout.attention, recipe.layout.float8) == ([], None, None)


def test_levers_round_trip_through_the_model_and_the_published_schema():
    data = variant(kernels=KERNELS, attention="sdpa-cudnn", float8=FP8)
    recipe = Recipe.model_validate(data)
    dumped = recipe.model_dump(mode="json")
    assert Recipe.model_validate(dumped) == recipe
    assert dumped["layout"]["float8"] == FP8 and dumped["layout"]["kernels"] == list(KERNELS)
    jsonschema.validate(yaml.safe_load(yaml.safe_dump(data)), recipe_json_schema())


def test_each_lever_renders_after_the_other_flags_in_order():
    data = variant(kernels=["liger-rmsnorm", "liger-fused-linear-cross-entropy"], attention="flex", float8=FP8)
    recipe = Recipe.model_validate(data)
    launch = render(recipe, load_reference_tables().models[recipe.model], parse_run(recipe.run))
    words = launch.torchtitan_argv()
    at = words.index("--openrecipes.kernels")
    assert words[at:] == [
        "--openrecipes.kernels", "liger-rmsnorm,liger-fused-linear-cross-entropy",
        "--openrecipes.attention", "flex",
        "--model.converters", "quantize.linear.float8",
        "--quantize.linear.float8.recipe_name", "tensorwise",
        "--quantize.linear.float8.filter_fqns", "output",
        "--quantize.linear.float8.enable_fsdp_float8_all_gather",
        "--quantize.linear.float8.precompute_float8_dynamic_scale_for_fsdp"]
    assert launch.script() == recipe.run


def test_no_lever_flag_without_its_field():
    recipe = Recipe.model_validate(variant())
    words = render(recipe, load_reference_tables().models["qwen3-8b"], parse_run(recipe.run)).torchtitan_argv()
    assert not [w for w in words if w.startswith(("--openrecipes.", "--model.converters", "--quantize."))]
    rowwise = variant(float8={"scaling": "rowwise"})
    recipe = Recipe.model_validate(rowwise)
    words = render(recipe, load_reference_tables().models["qwen3-8b"], parse_run(recipe.run)).torchtitan_argv()
    assert words[words.index("--model.converters"):] == [
        "--model.converters", "quantize.linear.float8", "--quantize.linear.float8.recipe_name", "rowwise"]


def test_recipes_with_levers_validate(tmp_path):
    assert errors_of(tmp_path, variant(kernels=KERNELS, attention="sdpa-flash", float8=FP8)) == {}


@pytest.mark.parametrize(("layout", "field", "says"), [
    ({"kernels": ["liger-layernorm"]}, "layout.kernels.0", "'liger-rmsnorm', 'liger-swiglu'"),
    ({"kernels": ["liger-rope", "liger-rmsnorm"]}, "layout.kernels", "write [liger-rmsnorm, liger-rope]"),
    ({"kernels": ["liger-rope", "liger-rope"]}, "layout.kernels", "each kernel once"),
    ({"attention": "flash3"}, "layout.attention", "'sdpa-cudnn', 'sdpa-flash', 'sdpa-efficient' or 'flex'"),
    ({"float8": {"scaling": "rowwise", "fsdp_float8_all_gather": True}}, "layout.float8",
     "needs scaling: tensorwise"),
    ({"float8": {"scaling": "tensorwise", "precomputed_scales": True}}, "layout.float8",
     "set fsdp_float8_all_gather: true"),
    ({"float8": {"scaling": "blockwise"}}, "layout.float8.scaling", "'tensorwise' or 'rowwise'"),
])
def test_bad_lever_values_name_the_field_and_the_allowed_values(tmp_path, layout, field, says):
    data = copy.deepcopy(load_seed(QWEN3_8B))
    data["layout"].update(layout)
    path = write(tmp_path, data)
    errors = {e.field: e.message for e in validate_file(path).errors}
    assert says in errors[field], errors


def test_fp8_precision_and_float8_go_together(tmp_path):
    data = variant(float8=FP8)
    data["layout"]["float8"] = None
    assert "workload.precision is fp8" in errors_of(tmp_path, data)["layout.float8"]
    data = variant(float8=FP8)
    data["workload"]["precision"] = "bf16"
    assert "set workload.precision to fp8" in errors_of(tmp_path, data)["layout.float8"]


def test_validator_reads_each_lever_back_from_the_run(tmp_path):
    with_levers = variant(kernels=["liger-swiglu"], attention="sdpa-cudnn", float8=FP8)
    data = copy.deepcopy(with_levers)
    data["layout"].update(kernels=["liger-rmsnorm", "liger-swiglu"], attention=None)
    data["layout"]["float8"] = dict(FP8, skip=[])
    errors = errors_of(tmp_path, data)
    assert "--openrecipes.kernels liger-swiglu" in errors["layout.kernels"]
    assert "fill the field or drop the flag" in errors["layout.attention"]
    assert "--quantize.linear.float8.filter_fqns output" in errors["layout.float8.skip"]
    stripped = copy.deepcopy(with_levers)
    stripped["run"] = stripped["run"].replace(" \\\n  --model.converters quantize.linear.float8", "")
    assert "add `--model.converters quantize.linear.float8`" in errors_of(tmp_path, stripped)["layout.float8"]


def test_render_refuses_a_run_that_disagrees_with_the_lever_fields():
    data = variant(kernels=["liger-rope"])
    data["layout"]["kernels"] = []
    recipe = Recipe.model_validate(data)
    with pytest.raises(UserError, match="--openrecipes.kernels liger-rope"):
        render(recipe, load_reference_tables().models[recipe.model], parse_run(recipe.run))


def test_a_tuned_layout_drops_the_base_runs_levers():
    base = Recipe.model_validate(variant(kernels=KERNELS))
    plain = Recipe.model_validate(variant())
    launch = compose(plain, load_reference_tables().models["qwen3-8b"], parse_run(base.run))
    assert "--openrecipes.kernels" not in launch.flags


def test_config_check_kernels_and_attention_are_placement(tmp_path):
    stock = write(tmp_path, variant(), "bf16.yaml")
    fused = write(tmp_path, variant(kernels=KERNELS, attention="sdpa-cudnn"), "fused.yaml")
    verdict = check_config(fused, stock)
    assert verdict["result"] == "pass" and verdict["placement_only"]
    assert {c["argument"] for c in verdict["changes"]} == {"--openrecipes.kernels", "--openrecipes.attention"}


def test_config_check_names_the_precision_change_of_an_fp8_twin(tmp_path):
    bf16 = write(tmp_path, variant(), "bf16.yaml")
    fp8 = write(tmp_path, variant(float8=FP8), "fp8.yaml")
    verdict = check_config(fp8, bf16)
    assert verdict["result"] == "precision change" and not verdict["placement_only"]
    assert {c["class"] for c in verdict["changes"]} == {"precision"}
    assert any(r.startswith("--model.converters changes the training precision (None -> quantize.linear.float8): "
                            "a model converter rewrites the model")
               and "the convergence check against the reference arm is the bar" in r for r in verdict["reasons"])
    fp8_fused = write(tmp_path, variant(kernels=["liger-rmsnorm"], float8=FP8), "fp8-fused.yaml")
    assert check_config(fp8_fused, bf16)["result"] == "precision change"


def test_a_numerics_change_beside_fp8_still_fails(tmp_path):
    bf16 = write(tmp_path, variant(), "bf16.yaml")
    data = variant(float8=FP8)
    data["run"] = data["run"].replace("--optimizer.lr 8e-4", "--optimizer.lr 1e-3")
    verdict = check_config(write(tmp_path, data, "fp8-lr.yaml"), bf16)
    assert verdict["result"] == "fail"
    assert any(r.startswith("--optimizer.lr changes the numerics") for r in verdict["reasons"])
