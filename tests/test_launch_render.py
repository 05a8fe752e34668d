"""Rendering a torchtitan recipe into its torchrun command: the exact command, the flags from the fields, errors."""

from __future__ import annotations

import pytest
from conftest import GPTOSS_1, REPO

from openrecipes.catalog.command import parse_run
from openrecipes.catalog.hardware import load_reference_tables
from openrecipes.catalog.store import load_recipe
from openrecipes.engines.registry import engine_of
from openrecipes.engines.torchtitan.command import ENTRY_MODULE
from openrecipes.engines.torchtitan.runner import layout_flags, render
from openrecipes.errors import UserError

QWEN3_8B = REPO / "recipes/qwen3-8b/h200/openrecipes-fsdp2-compile-noac-mb1.yaml"
QWEN3_8B_STOCK = REPO / "recipes/qwen3-8b/h200/torchtitan-stock-fsdp2.yaml"
QWEN3_1_7B = REPO / "recipes/qwen3-1.7b/h200/openrecipes-compile-noac-mb4.yaml"


def _render(path, **options):
    recipe = load_recipe(path)
    return recipe, render(recipe, load_reference_tables().models[recipe.model], parse_run(recipe.run), **options)


@pytest.mark.parametrize("path", [QWEN3_8B, QWEN3_8B_STOCK, QWEN3_1_7B])
def test_render_reproduces_the_published_command(path):
    recipe, launch = _render(path)
    assert launch.script() == recipe.run


def test_exact_torchrun_argv_of_the_8b_candidate():
    _, launch = _render(QWEN3_8B)
    argv = launch.argv()
    assert argv[:11] == ["torchrun", "--nnodes", "1", "--nproc_per_node", "2", "--local-ranks-filter", "0",
                         "--role", "rank", "--tee", "3"]
    assert argv[11:13] == ["-m", ENTRY_MODULE]
    tail = " ".join(argv[13:])
    for expected in ("--model.name qwen3 --model.flavor 8B", "--training.global_batch_size 16",
                     "--training.local_batch_size 1", "--parallelism.data_parallel_shard_degree 2",
                     "--activation_checkpoint.mode none --compile.enable",
                     "--parallelism.fsdp_reshard_after_forward never", "--optimizer.lr 8e-4"):
        assert expected in tail
    assert launch.env["NCCL_NVLS_ENABLE"] == "0"


def test_fields_decide_recompute_and_compile():
    recipe = load_recipe(QWEN3_8B_STOCK)
    flags = layout_flags(recipe, load_reference_tables().models[recipe.model])
    assert flags["--activation_checkpoint.mode"] == ["selective"]
    assert flags["--activation_checkpoint.selective_ac_option"] == ["op"]
    assert "--compile.enable" not in flags
    assert flags["--training.local_batch_size"] == ["2"]


def test_steps_and_overrides_replace_the_recipe_values():
    _, launch = _render(QWEN3_1_7B, steps=3, overrides={"--metrics.disable_color_printing": []})
    assert launch.flags["--training.steps"] == ["3"]
    assert "--metrics.disable_color_printing" in launch.torchtitan_argv()
    assert launch.nproc_per_node == 1 and launch.nnodes == 1


def test_a_command_that_disagrees_with_the_fields_is_refused():
    recipe = load_recipe(QWEN3_8B)
    changed = recipe.model_copy(
        update={"run": recipe.run.replace("--training.local_batch_size 1", "--training.local_batch_size 2")})
    with pytest.raises(UserError, match="local_batch_size"):
        render(changed, load_reference_tables().models[recipe.model], parse_run(changed.run))


def test_a_card_without_a_torchtitan_flavor_is_refused():
    recipe = load_recipe(QWEN3_8B)
    card = load_reference_tables().models[recipe.model]
    bare = card.model_copy(update={"architecture": {"layers": 36}})
    with pytest.raises(UserError, match="torchtitan_flavor"):
        layout_flags(recipe, bare)


def test_seed_recipes_are_not_torchtitan():
    assert engine_of(parse_run(load_recipe(GPTOSS_1).run)).name == "megatron"
    assert engine_of(parse_run(load_recipe(QWEN3_8B).run)).name == "torchtitan"


def test_each_one_node_run_gets_its_own_torchrun_port(monkeypatch):
    """Two one-node runs on one machine (a tune or sweep lane per GPU) must not both listen on torchrun's 29500."""
    from openrecipes.launch.execute import launch_environment

    recipe = load_recipe(REPO / "recipes/qwen3-1.7b/h200/torchtitan-stock.yaml")
    launch = render(recipe, load_reference_tables().models[recipe.model], parse_run(recipe.run), steps=10)
    monkeypatch.delenv("PET_MASTER_PORT", raising=False)
    first, second = launch_environment(launch), launch_environment(launch)
    assert first["PET_MASTER_PORT"] != "29500" and first["PET_MASTER_PORT"].isdigit()
    assert first["NCCL_NVLS_ENABLE"] == "0"  # the launch's own exports stay
    monkeypatch.setenv("PET_MASTER_PORT", "29613")
    assert launch_environment(launch)["PET_MASTER_PORT"] == "29613"  # the caller's choice wins
    assert second["PET_MASTER_PORT"].isdigit()
