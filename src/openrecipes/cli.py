"""The `openrecipes` command: a thin hallway; every command is a few lines in its room's cli module."""

from __future__ import annotations

import sys

import typer
from rich.console import Console

from openrecipes.errors import EXIT_BAD_INPUT, UserError

app = typer.Typer(
    name="openrecipes",
    help="OpenRecipes: verified LLM training recipes ranked by measured tokens/s per GPU.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


def _register_rooms() -> None:
    from openrecipes.catalog import cli as catalog_cli

    rooms = [catalog_cli]
    for optional in ("rows", "measure", "verify", "engines", "plan", "site"):
        try:
            rooms.append(__import__(f"openrecipes.{optional}.cli", fromlist=["register"]))
        except ModuleNotFoundError as missing:
            if missing.name != f"openrecipes.{optional}.cli":
                raise
    for room in rooms:
        room.register(app)


_register_rooms()


def main() -> None:
    try:
        app()
    except UserError as error:
        Console(stderr=True, highlight=False, soft_wrap=True).print(f"error: {error}", markup=False)
        sys.exit(EXIT_BAD_INPUT)
