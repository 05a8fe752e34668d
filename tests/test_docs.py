"""Every `openrecipes ...` example in README.md, CONTRIBUTING.md and docs/ is a command a user can type.

Synopsis lines (with `[OPTIONAL]` parts or `UPPERCASE` placeholders) are skipped. Each example is parsed against the
real command tree (names, options, argument counts and types), and the examples that need no GPU, network, large input
or `<placeholder>` are run for real in a copy of the catalog: they must not exit 2 (bad input).
They run in this process (the real entry point, as conftest's `openrecipes` does); the ones that build a site, rows,
tokenizers or every model's plans take many seconds each and are `slow`: CI runs them, the quick loop does not.
"""

import shlex
import shutil
from pathlib import Path

import pytest
import typer
from conftest import openrecipes
from typer._click import exceptions as click_errors  # typer vendors its own click

from openrecipes.cli import command_tree

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
PROGRAMS = ("openrecipes", ".venv/bin/openrecipes")
# Run for real: quick on a CPU and self-contained. Others (GPU runs, rows from a local parquet, serve) are parsed only.
RUNNABLE = {"list", "show", "validate", "schema", "audit", "launch", "check config", "measure", "plan",
            "tokenizer export", "rows demo", "site build"}
# Run for real only in the slow set: each takes seconds of CPU (a site's plots, a tokenizer, rows, every model's plans).
SLOW = {"tokenizer export", "rows demo", "site build", "plan export"}
CATALOG = ("recipes", "models", "hardware", "rules", "schema", "runs", "src")


def examples() -> list[tuple[str, list[str]]]:
    found = []
    for page in (p for p in PAGES if p.exists()):
        in_fence, pending, start = False, "", 0
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            if line.lstrip().startswith("```"):
                in_fence, pending = not in_fence, ""
                continue
            if not in_fence:
                continue
            text = line.strip()
            if not pending:
                start = number
            if text.endswith("\\"):
                pending += text[:-1] + " "
                continue
            command, pending = pending + text, ""
            if command.split(" ", 1)[0] not in PROGRAMS:
                continue
            words = shlex.split(command, comments=True)
            if words and not any(w.startswith("[") or (w.isalpha() and w.isupper()) for w in words):  # not a synopsis
                found.append((f"{page.relative_to(ROOT)}:{start}", words[1:]))
    return found


# The command tree the CLI runs, built once per process.
COMMANDS = command_tree()


def leaf(words: list[str]) -> tuple[typer.core.TyperCommand, str, list[str]]:
    """The command an example names, its dotted name and its own arguments."""
    command = COMMANDS
    names: list[str] = []
    while hasattr(command, "commands") and words and words[0] in command.commands:
        names.append(words[0])
        command, words = command.commands[words[0]], words[1:]
    return command, " ".join(names), words


EXAMPLES = examples()


def test_the_pages_hold_examples():
    assert len(EXAMPLES) >= 20


@pytest.mark.parametrize("where, words", EXAMPLES, ids=[w for w, _ in EXAMPLES])
def test_example_parses(where, words):
    command, name, args = leaf(words)
    assert name, f"{where}: `openrecipes {' '.join(words)}` names no command"
    try:
        command.make_context(name, list(args))
    except click_errors.BadParameter as error:  # a path the example's earlier steps create
        assert "does not exist" in error.format_message(), f"{where}: {error.format_message()}"


@pytest.fixture(scope="module")
def catalog_copy(tmp_path_factory):
    copy = tmp_path_factory.mktemp("docs-catalog")
    for name in CATALOG:
        shutil.copytree(ROOT / name, copy / name)
    return copy


def _run_name(words: list[str]) -> str:
    """The command an example runs, with `plan export` told apart from planning one model."""
    name = leaf(words)[1]
    return "plan export" if name == "plan" and words[1:2] == ["export"] else name


RUN = [pytest.param(w, words, id=w, marks=[pytest.mark.slow] if _run_name(words) in SLOW else [])
       for w, words in EXAMPLES
       if leaf(words)[1] in RUNNABLE and "--help" not in words and not any("<" in word for word in words)]


@pytest.mark.parametrize("where, words", RUN)
def test_example_runs(where, words, catalog_copy):
    done = openrecipes(*words, cwd=catalog_copy)
    assert done.returncode in (0, 1), f"{where}: exit {done.returncode}: {done.stderr[-500:]}"
