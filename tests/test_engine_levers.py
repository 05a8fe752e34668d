"""A layout's levers belong to its engine: each engine's lever block holds only the levers it has, and one
conversion builds it from what a recipe, a record entry, a written layout or an exported planner row states."""

from __future__ import annotations

import copy
from dataclasses import dataclass, replace

import pytest
from conftest import REPO, load_seed, openrecipes, write_recipe

from openrecipes.catalog.command import parse_run
from openrecipes.catalog.store import load_recipe
from openrecipes.catalog.validate import validate_file
from openrecipes.engines import registry
from openrecipes.engines.levers import UNPULLED
from openrecipes.engines.registry import ENGINES, engine_named
from openrecipes.errors import UserError
from openrecipes.plan.levers import LeverSearch, lever_groups
from openrecipes.plan.predict import PlanRequest, plan_table, predict

TORCHTITAN_FP8 = REPO / "recipes/qwen3-1.7b/h200/openrecipes-fp8-tensorwise-compile-noac-mb4.yaml"
MEGATRON_SEED = REPO / "recipes/glm-5.2-744b-a40b/b200/attune-tp4-pp2-cp4-mt12k.yaml"
MEGATRON_H200 = REPO / "recipes/gpt-oss-20b/h200/attune-tp1-pp1-ep4.yaml"


@pytest.mark.parametrize(("engine", "lever", "value"), [
    ("megatron", "compile", True), ("megatron", "kernels", ("liger-rope",)), ("megatron", "float8", "tensorwise"),
    ("torchtitan", "offload_fraction", 0.5), ("torchtitan", "low_precision", "fp8"),
    ("torchtitan", "grad_reduce_bf16", True), ("torchtitan", "megatron_fsdp", True),
])
def test_a_lever_the_engine_lacks_is_refused_by_name(engine, lever, value):
    with pytest.raises(UserError, match=f"^{lever} = .*: {engine} has no such lever"):
        engine_named(engine).levers_of(**{lever: value})


def test_a_layout_holds_its_own_engines_block_only():
    from openrecipes.plan.layouts import Layout

    degrees = (1, 1, 1, 1, 1, 1, 8, (36,), "none", 1, 8192)
    assert Layout("megatron", *degrees, engine_named("megatron").levers_of()).levers.offload_fraction == 0.0
    with pytest.raises(TypeError, match="a megatron layout with a TorchtitanLevers lever block"):
        Layout("megatron", *degrees, engine_named("torchtitan").levers_of())


def test_every_lever_unpulled_is_every_engines_plain_block():
    for engine in ENGINES:
        plain = engine.levers_of(**UNPULLED)
        assert plain == engine.levers_of() and {name: getattr(plain, name) for name in UNPULLED} == UNPULLED


def test_a_recipes_levers_are_read_from_its_fields_and_command_by_its_runner():
    fp8 = load_recipe(TORCHTITAN_FP8)
    levers = engine_named(fp8.engine).runner.levers_of(fp8, parse_run(fp8.run))
    assert (levers.compile, levers.float8, levers.kernels, levers.offload_fraction) == (True, "tensorwise", (), 0.0)
    seed = load_recipe(MEGATRON_SEED)
    levers = engine_named(seed.engine).runner.levers_of(seed, parse_run(seed.run))
    assert (levers.offload_fraction, levers.compile, levers.low_precision) == (0.9, False, None)
    fp8 = seed.model_copy(update={"workload": seed.workload.model_copy(update={"precision": "fp8"})})
    assert engine_named(seed.engine).runner.levers_of(fp8, parse_run(seed.run)).low_precision == "fp8"


def test_an_exported_row_reads_back_as_the_block_it_was_predicted_with():
    request = PlanRequest("qwen3-8b", "H200", 2, 8192, 16, "torchtitan")
    for prediction in predict(request)[:20]:
        assert prediction.exported().levers == prediction.layout.levers
    for row in plan_table("gpt-oss-20b", "H200", 8, engine="megatron", top=20):
        assert row.levers.offload_fraction == row.offload_fraction and not row.levers.compile


def test_plan_refuses_a_lever_the_engine_lacks_naming_its_option():
    result = openrecipes("plan", "qwen3-8b", "--gpu", "H200", "--gpus", "2", "--engine", "torchtitan",
                         "--grad-reduce-bf16")
    assert result.returncode == 2 and "--grad-reduce-bf16: torchtitan has no BF16 gradient reduction" in result.stderr


@pytest.mark.parametrize(("source", "layout", "field", "says"), [
    (MEGATRON_H200, {"compile": True}, "layout.compile", "megatron has no such lever (its own: offload)"),
    (MEGATRON_H200, {"kernels": ["liger-rope"]}, "layout.kernels", "megatron has no such lever"),
    (TORCHTITAN_FP8, {"offload": {"optimizer_fraction": 0.5, "overlap_d2h_h2d": True}}, "layout.offload",
     "torchtitan has no such lever (its own: compile, kernels, attention, float8)"),
])
def test_the_validator_refuses_a_recipe_lever_its_engine_lacks(tmp_path, source, layout, field, says):
    data = copy.deepcopy(load_seed(source))
    data["layout"].update(layout)
    errors = {e.field: e.message for e in validate_file(write_recipe(tmp_path, data)).errors}
    assert says in errors[field], errors


@dataclass(frozen=True)
class SketchLevers:
    """A sketched FSDP2 engine's levers: torch.compile and resharding, no Liger kernels, no FP8."""

    compile: bool = False
    reshard_after_forward: bool = True
    kernels = property(lambda self: ())
    attention = property(lambda self: None)
    float8 = property(lambda self: None)
    low_precision = property(lambda self: None)
    offload_fraction = property(lambda self: 0.0)
    grad_reduce_bf16 = property(lambda self: False)
    megatron_fsdp = property(lambda self: False)


def test_a_new_engines_lever_block_is_searched_for_its_own_levers_only(monkeypatch):
    """An engine added with its own block: the enumeration varies its levers and never offers it a kernel or FP8,
    though both were measured on the GPU type; a source stating a kernel for it is refused."""
    sketch = replace(engine_named("torchtitan"), name="sketch", lever_block=SketchLevers)
    monkeypatch.setitem(registry._BY_NAME, "sketch", sketch)
    blocks = [group[0] for group in lever_groups("sketch", "H200", LeverSearch(float8="measured"))]
    assert sorted((b.compile, b.reshard_after_forward) for b in blocks) == [(False, False), (False, True),
                                                                            (True, False), (True, True)]
    assert all(isinstance(b, SketchLevers) for b in blocks)
    assert len(lever_groups("torchtitan", "H200", LeverSearch(float8="measured"))) > len(blocks)
    with pytest.raises(UserError, match="kernels = .*: sketch has no such lever"):
        sketch.levers_of(kernels=("liger-rope",))
