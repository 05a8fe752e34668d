"""torchtitan's knowledge as the rest of OpenRecipes asks it: its recipes, flags, log format and layout rules."""

from __future__ import annotations

from openrecipes.engines.knowledge import Engine, LaunchCommand
from openrecipes.engines.torchtitan import flags, layouts, logs

ENTRY_MODULE = "openrecipes.engines.torchtitan.train"  # the torchrun entry of engines/torchtitan/train.py


def is_recipe(run: LaunchCommand) -> bool:
    """A torchtitan recipe: its run command is torchrun starting our entry module."""
    return bool(run.argv) and run.argv[0] == "torchrun" and ENTRY_MODULE in run.argv


ENGINE = Engine(name="torchtitan", is_recipe=is_recipe, flags=flags.FLAGS, flags_when_present=flags.FLAGS_WHEN_PRESENT,
                node_flags=flags.NODE_FLAGS, log_formats=(logs.FORMAT,), layout=layouts.RULES)
