"""Every command's help reads as written: rich, which prints typer's help, reads `:name:` as an emoji code, so no
help text may hold one (`sbatch --time`'s `H:M:S` was printed `HⓂS`)."""

from __future__ import annotations

import typer
from conftest import openrecipes
from rich.emoji import Emoji


def _help_texts(command: object, path: tuple[str, ...] = ()):
    yield path, getattr(command, "help", None) or ""
    for param in getattr(command, "params", []):
        yield (*path, param.name), getattr(param, "help", None) or ""
    for name, sub in getattr(command, "commands", {}).items():
        yield from _help_texts(sub, (*path, name))


def test_no_help_text_turns_into_an_emoji():
    from openrecipes.cli import app

    turned = [(path, text) for path, text in _help_texts(typer.main.get_command(app)) if Emoji.replace(text) != text]
    assert not turned
    done = openrecipes("launch", "--help")
    assert "HH:MM:SS" in done.stdout and "Ⓜ" not in done.stdout
