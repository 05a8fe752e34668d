"""The engines OpenRecipes knows, each one folder (engines/<name>/) whose engine.py fills one `Engine`.

Adding an engine: its folder, and its line here. The rooms iterate ENGINES instead of naming engines.
"""

from __future__ import annotations

from typing import Literal

from openrecipes.engines.knowledge import Engine
from openrecipes.engines.megatron.engine import ENGINE as MEGATRON
from openrecipes.engines.runner import LaunchCommand
from openrecipes.engines.torchtitan.engine import ENGINE as TORCHTITAN

ENGINES: tuple[Engine, ...] = (TORCHTITAN, MEGATRON)
_BY_NAME = {engine.name: engine for engine in ENGINES}
PLANNER_DEFAULT = MEGATRON  # the planner's engine where nothing names one
# The engine `plan emit` writes a recipe for where nothing names one, and whose runs the tune and sweep records hold.
RUN_DEFAULT = TORCHTITAN
# The training frameworks the public record names (published.engine), each modelled by the engine whose
# `published_as` lists it; a Literal, so the recipe schema lists them.
PublishedFramework = Literal["megatron-bridge", "torchtitan", "nemo"]
_BY_FRAMEWORK = {framework: engine for engine in ENGINES for framework in engine.published_as}


def engine_of(run: LaunchCommand) -> Engine | None:
    """The engine whose recipe a parsed run command is; None when no engine claims it."""
    return next((engine for engine in ENGINES if engine.is_recipe(run)), None)


def engine_named(name: str) -> Engine:
    """The engine called `name` (the planner's `--engine`); a KeyError names the known ones."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"no engine {name!r}; the engines are {', '.join(names())}") from None


def engine_of_framework(framework: str) -> Engine:
    """The engine that models a published run of `framework` (a PublishedFramework)."""
    return _BY_FRAMEWORK[framework]


def names() -> list[str]:
    return sorted(engine.name for engine in ENGINES)


def current_words(words: list[str]) -> list[str]:
    """A launcher's words with every engine's renamed modules under their current names."""
    renamed = {old: new for engine in ENGINES for old, new in engine.renamed.items()}
    return [renamed.get(word, word) for word in words]
