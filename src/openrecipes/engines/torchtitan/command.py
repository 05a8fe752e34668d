"""What a torchtitan recipe's command is: torchrun starting our entry module, under its current or former path."""

from __future__ import annotations

from openrecipes.engines.runner import LaunchCommand

PACKAGE = "torchtitan"  # the Python package the entry module trains with; a recipe's stack records its version
ENTRY_MODULE = "openrecipes.launch.torchtitan.train"  # the torchrun entry of launch/torchtitan/train.py
# The same entry under its former path: the command.sh files of runs recorded before 2026-12-03 name it, and a
# reference arm's command is read back from them.
FORMER_ENTRY_MODULE = "openrecipes.engines.torchtitan.train"
ENTRY_MODULES = (ENTRY_MODULE, FORMER_ENTRY_MODULE)


def entry_at(argv: list[str]) -> int | None:
    """Where the entry module stands in a command's words, under either of its paths."""
    return next((at for at, word in enumerate(argv) if word in ENTRY_MODULES), None)


def is_recipe(run: LaunchCommand) -> bool:
    """A torchtitan recipe: its run command is torchrun starting our entry module."""
    return bool(run.argv) and run.argv[0] == "torchrun" and entry_at(list(run.argv)) is not None
