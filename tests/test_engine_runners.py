"""A recipe names its engine, the validator holds the name to the command once, and every recipe is rendered
through its engine's runner (engines/runner.py): the one interface `run`, `launch`, `tune` and `record` use."""

from __future__ import annotations

import pytest
from conftest import REPO, openrecipes

from openrecipes.catalog.command import parse_run
from openrecipes.catalog.hardware import load_reference_tables
from openrecipes.catalog.model import Recipe
from openrecipes.catalog.store import load_catalog
from openrecipes.catalog.validate import validate_file
from openrecipes.engines.registry import engine_named, engine_of
from openrecipes.errors import UserError

TORCHTITAN_RECIPE = REPO / "recipes/qwen3-1.7b/h200/torchtitan-stock.yaml"


def _with_engine(tmp_path, engine_line: str):
    text = TORCHTITAN_RECIPE.read_text(encoding="utf-8").replace("engine: torchtitan\n", engine_line, 1)
    path = tmp_path / "recipe.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_an_engine_that_disagrees_with_the_command_is_one_finding_with_its_fix(tmp_path):
    path = _with_engine(tmp_path, "engine: megatron\n")
    errors = validate_file(path).errors
    assert [e.field for e in errors] == ["engine"]
    assert "set engine: torchtitan" in errors[0].message
    done = openrecipes("run", str(path), "--dry-run")
    assert done.returncode == 2 and not done.stdout
    assert done.stderr.count("\n") == 1 and str(path) in done.stderr and "set engine: torchtitan" in done.stderr


def test_a_recipe_without_an_engine_is_told_the_choices(tmp_path):
    errors = validate_file(_with_engine(tmp_path, "")).errors
    assert [e.field for e in errors] == ["engine"]
    assert "megatron, torchtitan" in errors[0].message


@pytest.mark.parametrize("run", ["python3 pretrain_gpt.py --lr 1e-5", "torchrun --nproc_per_node 8 train.py",
                                 "python3 -m some.trainer --seq-length 8192"])
def test_a_command_no_engine_knows_is_claimed_by_none(run):
    assert engine_of(parse_run(run)) is None


def _catalog_recipes() -> list[Recipe]:
    return [e.entry for e in load_catalog(REPO).entries if isinstance(e.entry, Recipe)]


def test_every_recipe_renders_through_its_engines_runner():
    tables = load_reference_tables()
    recipes = _catalog_recipes()
    assert {recipe.engine for recipe in recipes} == {"megatron", "torchtitan"}
    for recipe in recipes:
        runner = engine_named(recipe.engine).runner
        launch = runner.launch(recipe, tables.models[recipe.model], parse_run(recipe.run))
        assert launch.nnodes * launch.nproc_per_node == recipe.gpu.count
        assert launch.steps == recipe.result.steps_per_run
        assert launch.dry_run().startswith(launch.script() if runner.runs_here else "# ")
        if runner.runs_here:  # one torchrun per node, starting the same module the one-node command starts
            assert launch.node_command().module in launch.argv()
        else:  # shown, never started here
            with pytest.raises(UserError):
                launch.node_command()
