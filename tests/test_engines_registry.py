"""The engine registry: every recipe belongs to exactly one engine, every flag row names a recipe field, every
engine's log formats are the ones the measure room detects, and the planner finds each engine's rules by name."""

from __future__ import annotations

import pytest
from conftest import GPTOSS_1, REPO

from openrecipes.catalog.command import parse_run
from openrecipes.catalog.model import Recipe
from openrecipes.catalog.store import load_catalog, load_recipe
from openrecipes.engines.registry import ENGINES, engine_named, engine_of
from openrecipes.measure.formats import detect_format, read_log_lines

LOGS = REPO / "tests/fixtures/logs"
TORCHTITAN_RECIPE = REPO / "recipes/qwen3-8b/h200/torchtitan-stock-fsdp2.yaml"


def test_every_catalog_recipe_is_claimed_by_exactly_one_engine():
    recipes = [e.entry for e in load_catalog(REPO).entries if isinstance(e.entry, Recipe)]
    claims = {recipe.run: [engine.name for engine in ENGINES if engine.is_recipe(parse_run(recipe.run))]
              for recipe in recipes}
    assert recipes and all(len(names) == 1 for names in claims.values())
    assert {names[0] for names in claims.values()} == {"megatron", "torchtitan"}


def test_a_command_no_engine_starts_is_claimed_by_none():
    assert engine_of(parse_run("python3 -m openrecipes.launch.torchtitan.train --training.steps 3")) is None


def test_the_validator_names_a_command_no_engine_starts(tmp_path):
    from openrecipes.catalog.validate import validate_file

    text = TORCHTITAN_RECIPE.read_text().replace("torchrun ", "python3 -m torch.distributed.run ", 1)
    path = tmp_path / "recipe.yaml"
    path.write_text(text)
    assert any("no engine's command" in e.message for e in validate_file(path).errors)


@pytest.mark.parametrize("recipe_path", [GPTOSS_1, TORCHTITAN_RECIPE])
def test_every_flag_row_names_a_field_of_the_recipe(recipe_path):
    recipe = load_recipe(recipe_path)
    engine = engine_of(parse_run(recipe.run))
    for row in engine.flags + engine.flags_when_present:
        value: object = recipe
        for part in row.field.split("."):
            if value is None:
                break  # an optional block the recipe leaves out
            assert hasattr(value, part), f"{engine.name}: {row.flag} -> {row.field}: no field '{part}'"
            value = getattr(value, part)


def test_every_registered_log_format_is_detected_in_its_own_log():
    registered = {log_format.name for engine in ENGINES for log_format in engine.log_formats}
    detected = {detect_format(log, read_log_lines(log)) for log in LOGS.iterdir()}
    assert registered <= detected and detected - registered == {"jsonl"}


def test_the_planner_finds_each_engine_by_name():
    assert [engine_named(engine.name) for engine in ENGINES] == list(ENGINES)
    with pytest.raises(KeyError, match="megatron, torchtitan"):
        engine_named("deepspeed")


def test_every_published_framework_is_modelled_by_exactly_one_engine():
    from typing import get_args

    from openrecipes.engines.registry import PublishedFramework, engine_of_framework

    modelled = [framework for engine in ENGINES for framework in engine.published_as]
    assert sorted(modelled) == sorted(get_args(PublishedFramework))
    assert engine_of_framework("nemo").name == "megatron"  # NeMo runs Megatron Core


def test_one_engine_runs_here_and_it_renders_every_row_of_its_table():
    from openrecipes.catalog.hardware import load_reference_tables
    from openrecipes.engines.torchtitan.runner import layout_flags

    assert [engine.name for engine in ENGINES if engine.runner.runs_here] == ["torchtitan"]
    recipe = load_recipe(TORCHTITAN_RECIPE)
    engine = engine_of(parse_run(recipe.run))
    rendered = layout_flags(recipe, load_reference_tables().models[recipe.model])
    written = {row.flag for row in engine.flags if row.words(recipe) is not None} - set(engine.node_flags)
    assert written <= set(rendered)
    # read back from the rendered words, every row gives the value the validator expects of the recipe
    command = parse_run("torchrun --nnodes 1 --nproc_per_node 2 -m openrecipes.launch.torchtitan.train "
                        + " ".join(f"{flag} {' '.join(words)}" for flag, words in rendered.items()))
    assert all(row.read(command) == row.expected(recipe) for row in engine.flags)


def test_the_validator_checks_every_flag_the_renderer_writes(tmp_path):
    """The selective-AC method is a row of the table, so a command without it fails validation, as rendering does."""
    from openrecipes.catalog.validate import validate_file

    text = TORCHTITAN_RECIPE.read_text().replace(" \\\n    --activation_checkpoint.selective_ac_option op", "", 1)
    assert text != TORCHTITAN_RECIPE.read_text()
    path = tmp_path / "recipe.yaml"
    path.write_text(text)
    assert [e.field for e in validate_file(path).errors] == ["layout.recompute.method"]
