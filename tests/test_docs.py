"""Every page runs as written: each `openrecipes ...` command in a fenced block of README.md, CONTRIBUTING.md and
docs/*.md is run, in the page's order, in a scratch copy of the catalog, the way a new user would type it.

Conventions a page follows (any new page is picked up by its file name alone):
- A command is a line of a fenced block starting `openrecipes`, `.venv/bin/openrecipes` or `$ openrecipes` (a
  trailing `\\` continues it). Lines with `[OPTIONAL]` parts are synopses: parsed nowhere, run never.
- Placeholders (`<your-run>`, or an UPPERCASE word such as `TOKENIZER_DIR` or `DATA.jsonl`) are filled from the
  page's own table whose header starts `| placeholder | example |`: the first `code` span of the example cell is
  what the command gets. A placeholder the table lacks fails the test.
- A command that needs a GPU ends with the comment `# needs a GPU`: it is parsed against the command tree
  (names, options, required options, types) and not run. Where a later command reads the run folder such a run
  writes (`--out runs/NAME`), STORED_RUNS names the stored run folder that stands in for it.
- Every other command must exit 0, or 1 where its comment starts `# exits 1` (a check shown failing). `serve` (a
  server that runs until stopped) is parsed only.
Pages are run in process (conftest's `openrecipes`, the real entry point); a page that builds tokenizers, rows, a
site, plans or the derived files takes seconds of CPU and is `slow` (CI runs it, the quick loop parses it only).
"""

from __future__ import annotations

import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
import typer
from conftest import openrecipes
from typer._click import exceptions as click_errors  # typer vendors its own click

from openrecipes.cli import command_tree

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
PROGRAMS = ("openrecipes", ".venv/bin/openrecipes")
GPU_MARKER = "# needs a GPU"
EXIT_1_MARKER = "# exits 1"  # a check that is shown failing: exit 1 is what the page promises
NEVER_RUN = {"serve"}  # runs until stopped: parsed only
# Commands that take seconds of CPU each (a tokenizer export, rows, a site's plots, every model's plans, the planner's
# refits): a page holding one runs in the slow set.
SLOW = {"tokenizer export", "rows demo", "rows build", "site build", "plan export", "refresh"}
# Run folders a `# needs a GPU` run would write, and the stored runs that stand in for them on a CPU: the stored
# contributed run (a measured layout the catalog has no recipe of) and the published Qwen3-8B arms.
FIXTURE = ROOT / "tests/fixtures/contributed-run"
STORED_RUNS = {
    "runs/my-full-ac-mb2": FIXTURE / "candidate",
    "runs/my-stock-10-steps": FIXTURE / "reference",
    "runs/check-8b-ours": ROOT / "runs/qwen3-8b-h200x2-openrecipes-fsdp2-compile-noac-mb1",
    "runs/check-8b-stock": ROOT / "runs/qwen3-8b-h200x2-torchtitan-stock",
}
# What a clone holds that the commands read: the catalog, its raw logs, the rows' sources and the code (refresh
# rewrites the clone's own calibration under src/ and its derived/ tables).
CLONE = ("recipes", "models", "hardware", "rules", "schema", "runs", "plans", "derived", "data", "src", "benchmarks",
         "tests/fixtures")
# A page whose path ends in `refresh` runs in a clone whose recipes are those of the one model it records a recipe
# for: the same steps (record, validate, audit, the planner's refits, held-out tables and plan export, written into
# the clone) on a few measured points, seconds of CPU where the whole catalog takes minutes. The whole catalog's
# derived files are held to what the code computes now by tests/test_plan_*.py and CI's `refresh --check`.
ONE_MODEL = {"CONTRIBUTING.md": "qwen3-1.7b"}
PLACEHOLDER = re.compile(r"<[^<>\s]+>|(?<![\w.-])[A-Z][A-Z_]{2,}(?=[./]|\b)(?![\w-])")


@dataclass(frozen=True)
class Example:
    page: str
    line: int
    text: str  # as written, placeholders filled
    words: list[str]  # after the program name
    gpu: bool

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def placeholders(text: str) -> dict[str, str]:
    """The page's `| placeholder | example |` table: each placeholder and the first code span of its example."""
    table, found = False, {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.lstrip().startswith("|") else []
        if len(cells) >= 2 and [c.lower() for c in cells[:2]] == ["placeholder", "example"]:
            table = True
        elif table and cells and not set(cells[0]) <= set("-: "):
            name, example = re.findall(r"`([^`]+)`", cells[0]), re.findall(r"`([^`]+)`", cells[1])
            if name and example:
                found[name[0]] = example[0]
        elif table and not cells:
            table = False
    return found


def fenced_commands(text: str) -> list[list[tuple[int, str]]]:
    """Each fenced block's commands (first line number, the command with its continuations joined)."""
    blocks: list[list[tuple[int, str]]] = []
    in_fence, pending, start = False, "", 0
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            in_fence, pending = not in_fence, ""
            blocks.append([])
            continue
        if not in_fence:
            continue
        stripped = line.strip().removeprefix("$ ")
        if not pending:
            start = number
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        command, pending = pending + stripped, ""
        if command.split(" ", 1)[0] in PROGRAMS:
            blocks[-1].append((start, command))
    return blocks


def page_examples(page: Path) -> list[Example]:
    text = page.read_text(encoding="utf-8")
    fill = placeholders(text)
    found = []
    for block in fenced_commands(text):
        if any(w.startswith("[") for _, command in block for w in shlex.split(command, comments=True)):
            continue  # a synopsis block: its lines show the options, not a command to type
        for start, command in block:
            for name in sorted(fill, key=len, reverse=True):
                command = command.replace(name, fill[name])
            words = shlex.split(command, comments=True)
            found.append(Example(page.relative_to(ROOT).as_posix(), start, command, words[1:], GPU_MARKER in command))
    return found


EXAMPLES = [example for page in PAGES if page.exists() for example in page_examples(page)]
COMMANDS = command_tree()


def leaf(words: list[str]) -> tuple[typer.core.TyperCommand, str, list[str]]:
    """The command an example names, its dotted name and its own arguments."""
    command = COMMANDS
    names: list[str] = []
    while hasattr(command, "commands") and words and words[0] in command.commands:
        names.append(words[0])
        command, words = command.commands[words[0]], words[1:]
    return command, " ".join(names), words


def run_name(words: list[str]) -> str:
    name = leaf(words)[1]
    return "plan export" if name == "plan" and words[1:2] == ["export"] else name


def test_the_pages_hold_examples():
    assert len(EXAMPLES) >= 40
    assert any(e.gpu for e in EXAMPLES) and any(not e.gpu for e in EXAMPLES)


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.where for e in EXAMPLES])
def test_example_is_filled_and_parses(example):
    """Every placeholder is filled from the page's table, and the command tree accepts the example: its names,
    options, types and every required option (a missing one is what a user would hit first)."""
    left = [w for w in example.words if PLACEHOLDER.search(w)]
    assert not left, f"{example.where}: {left} not in the page's `| placeholder | example |` table"
    command, name, args = leaf(example.words)
    assert name, f"{example.where}: `openrecipes {' '.join(example.words)}` names no command"
    try:
        command.make_context(name, list(args))
    except click_errors.MissingParameter as error:
        pytest.fail(f"{example.where}: {error.format_message()}")
    except click_errors.BadParameter as error:  # a path an earlier step (or a GPU run) creates
        assert "does not exist" in error.format_message(), f"{example.where}: {error.format_message()}"
    except click_errors.UsageError as error:
        pytest.fail(f"{example.where}: {error.format_message()}")


def _pages_to_run():
    for page in PAGES:
        examples = [e for e in EXAMPLES if e.page == page.relative_to(ROOT).as_posix()]
        if any(not e.gpu and run_name(e.words) not in NEVER_RUN for e in examples):
            slow = any(run_name(e.words) in SLOW or "--rebuild-rows" in e.words for e in examples if not e.gpu)
            yield pytest.param(page.relative_to(ROOT).as_posix(), examples,
                               id=page.relative_to(ROOT).as_posix(), marks=[pytest.mark.slow] if slow else [])


def clone(into: Path, model: str | None = None) -> Path:
    """A copy of the catalog and the code; with `model`, only that model's recipes."""
    for name in CLONE:
        shutil.copytree(ROOT / name, into / name, ignore=shutil.ignore_patterns("__pycache__"))
    for other in (p for p in (into / "recipes").iterdir() if model and p.name != model):
        shutil.rmtree(other)
    return into


@pytest.mark.parametrize("page, examples", list(_pages_to_run()))
def test_page_runs_as_written(page, examples, tmp_path):
    """The page's commands, in order, in a fresh copy of the catalog: each exits 0 (a GPU's run is stood in for
    by its stored run folder, where one is named)."""
    scratch = clone(tmp_path / "clone", ONE_MODEL.get(page))
    derived = {path: path.read_bytes() for path in (ROOT / "src/openrecipes/plan").glob("*.*") if path.is_file()}
    for example in examples:
        if example.gpu:
            out = example.words[example.words.index("--out") + 1] if "--out" in example.words else None
            if out in STORED_RUNS:
                shutil.copytree(STORED_RUNS[out], scratch / out, dirs_exist_ok=True)
            continue
        if run_name(example.words) in NEVER_RUN:
            continue
        if _reuse(example.words, scratch):
            continue
        done = openrecipes(*example.words, cwd=scratch)
        expected = 1 if EXIT_1_MARKER in example.text else 0
        assert done.returncode == expected, (
            f"{example.where}: `{example.text}` exit {done.returncode}: {done.stderr[-600:]}")
        if run_name(example.words) in REUSED:
            BUILT[_build_key(example.words)] = scratch / example.words[example.words.index("--out") + 1]
    changed = [path.name for path, data in derived.items() if path.read_bytes() != data]
    assert not changed, f"{page}: wrote this checkout's {changed}, not the clone's"


# A tokenizer export or demo build writes the same bytes wherever it runs, from the same options (its manifest pins
# them), so a build this session already made, with the same options into any folder, is copied from there: the
# README, CONTRIBUTING, docs/rows.md and docs/running.md build the same demo rows, 5 to 10 s of CPU each time.
REUSED = {"tokenizer export", "rows demo"}
BUILT: dict[tuple, Path] = {}


def _build_key(words: list[str]) -> tuple:
    """The command and every option's value as parsed (defaults filled in), the output folder left out."""
    command, name, args = leaf(words)
    params = command.make_context(name, list(args)).params
    return name, tuple(sorted((key, str(value)) for key, value in params.items() if key != "out"))


def _reuse(words: list[str], scratch: Path) -> bool:
    built = BUILT.get(_build_key(words)) if run_name(words) in REUSED else None
    if built is None or not built.is_dir():
        return False
    out = scratch / words[words.index("--out") + 1]
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(built, out, symlinks=True)
    return True
