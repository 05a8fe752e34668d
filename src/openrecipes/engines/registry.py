"""The engines OpenRecipes knows, each one folder (engines/<name>/) whose engine.py fills one `Engine`.

Adding an engine: its folder, and its line here. The rooms iterate ENGINES instead of naming engines.
"""

from __future__ import annotations

from openrecipes.engines.knowledge import Engine, LaunchCommand
from openrecipes.engines.megatron.engine import ENGINE as MEGATRON
from openrecipes.engines.torchtitan.engine import ENGINE as TORCHTITAN

ENGINES: tuple[Engine, ...] = (TORCHTITAN, MEGATRON)
_BY_NAME = {engine.name: engine for engine in ENGINES}


def engine_of(run: LaunchCommand) -> Engine | None:
    """The engine whose recipe a parsed run command is; None when no engine claims it."""
    return next((engine for engine in ENGINES if engine.is_recipe(run)), None)


def engine_named(name: str) -> Engine:
    """The engine called `name` (the planner's `--engine`); a KeyError names the known ones."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"no engine {name!r}; the engines are {', '.join(names())}") from None


def names() -> list[str]:
    return sorted(engine.name for engine in ENGINES)


def current_words(words: list[str]) -> list[str]:
    """A launcher's words with every engine's renamed modules under their current names."""
    renamed = {old: new for engine in ENGINES for old, new in engine.renamed.items()}
    return [renamed.get(word, word) for word in words]
