"""The `openrecipes` command: a thin hallway; every command is a few lines in its room's cli module."""

from __future__ import annotations

import os
import sys
from functools import cache

import typer
from rich.console import Console
from typer._click import exceptions as click  # typer vendors click; its usage errors are these classes
from typer._click.core import Command

from openrecipes import refresh as refresh_cli
from openrecipes.answer import cli as answer_cli
from openrecipes.audit import cli as audit_cli
from openrecipes.catalog import cli as catalog_cli
from openrecipes.errors import EXIT_BAD_INPUT, UserError
from openrecipes.launch import cli as launch_cli
from openrecipes.measure import cli as measure_cli
from openrecipes.plan import cli as plan_cli
from openrecipes.probe import cli as probe_cli
from openrecipes.rows import cli as rows_cli
from openrecipes.site import cli as site_cli
from openrecipes.textfile import shown
from openrecipes.tune import cli as tune_cli
from openrecipes.verify import cli as verify_cli

app = typer.Typer(
    name="openrecipes",
    help="OpenRecipes: verified LLM training recipes ranked by measured tokens/s per GPU.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


for room in (answer_cli, catalog_cli, rows_cli, launch_cli, measure_cli, verify_cli, audit_cli, plan_cli, probe_cli,
             tune_cli, refresh_cli, site_cli):
    room.register(app)


@cache
def command_tree() -> Command:
    """The click command tree typer builds from every command's signature: a tenth of a second of reading type
    hints, so it is built once per process however many times `main` runs in it (a test session, a notebook)."""
    return typer.main.get_command(app)


@cache
def value_options() -> frozenset[str]:
    """Every option name that takes a value, in any command."""
    names: set[str] = set()
    pending = [command_tree()]
    while pending:
        command = pending.pop()
        pending += getattr(command, "commands", {}).values()
        names.update(name for param in command.params
                     if param.param_type_name == "option" and not getattr(param, "is_flag", True)
                     for name in param.opts)
    return frozenset(names)


def refuse_empty_values(argv: list[str]) -> None:
    """`--kernels ''` or `--host=` would mean "off" or "every interface" by accident: an option given is given a
    value, or left out."""
    options = value_options()
    for word, following in zip(argv, [*argv[1:], None], strict=True):
        name, equals, value = word.partition("=")
        given = value if equals else following if word in options else None
        if name in options and given is not None and not given.strip():
            raise UserError(f"{name}: the value is empty; give a value or leave the option out")


def main() -> None:
    try:
        refuse_empty_values(sys.argv[1:])
        # usage errors come here, to be told on one line like any bad input
        code = command_tree()(standalone_mode=False)
    except click.NoArgsIsHelpError as error:
        typer.echo(error.ctx.get_help())
        code = 0
    except click.UsageError as error:
        command = error.ctx.command_path if error.ctx else "openrecipes"
        _bad_input(f"{error.format_message()} (see `{command} --help`)")
    except click.ClickException as error:
        _bad_input(error.format_message())
    except typer.Abort:
        code = 1
    except UserError as error:
        _bad_input(str(error))
    except SystemExit as done:
        # click exits 1 when the reader closes the pipe (`| head`), yet the reader has all it wanted: no error
        if not isinstance(done.__context__, BrokenPipeError):
            raise
        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # the process's stdout: the exit's flush writes nowhere
        code = 0
    except OSError as error:  # a path the user gave cannot be written or read: their input, not our bug
        _bad_input(f"{shown(error.filename or '')}: {error.strerror or error}; check the path")
    except RuntimeError as error:
        if "Symlink loop" not in str(error):  # pathlib's resolve() on a looping link; anything else is our bug
            raise
        _bad_input(f"{error}; remove the looping symbolic link")
    sys.exit(code if isinstance(code, int) else 0)


def _bad_input(reason: str) -> None:
    """Every bad input ends here: one line (whatever the message holds), printable, exit 2."""
    line = shown(" ".join(reason.splitlines()))
    Console(stderr=True, highlight=False, soft_wrap=True).print(f"error: {line}", markup=False)
    sys.exit(EXIT_BAD_INPUT)
