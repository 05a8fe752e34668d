"""The `openrecipes` command: a thin hallway; every command is a few lines in its room's cli module."""

from __future__ import annotations

import sys

import typer
from rich.console import Console

from openrecipes.audit import cli as audit_cli
from openrecipes.catalog import cli as catalog_cli
from openrecipes.engines import cli as engines_cli
from openrecipes.errors import EXIT_BAD_INPUT, UserError
from openrecipes.measure import cli as measure_cli
from openrecipes.plan import cli as plan_cli
from openrecipes.rows import cli as rows_cli
from openrecipes.site import cli as site_cli
from openrecipes.verify import cli as verify_cli

app = typer.Typer(
    name="openrecipes",
    help="OpenRecipes: verified LLM training recipes ranked by measured tokens/s per GPU.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


for room in (catalog_cli, rows_cli, engines_cli, measure_cli, verify_cli, audit_cli, plan_cli, site_cli):
    room.register(app)


def main() -> None:
    try:
        app()
    except UserError as error:
        _bad_input(str(error))
    except OSError as error:  # a path the user gave cannot be written or read: their input, not our bug
        _bad_input(f"{error.filename or ''}: {error.strerror or error}; check the path")


def _bad_input(reason: str) -> None:
    Console(stderr=True, highlight=False, soft_wrap=True).print(f"error: {reason}", markup=False)
    sys.exit(EXIT_BAD_INPUT)
