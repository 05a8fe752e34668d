"""A planned recipe's rows: the base recipe's rows when they are the length and count the plan needs, else the rows
its own `openrecipes rows` command builds (the base's builder at the plan's row length and row count, into its own
folder), described by what is known before they are built and null where only a built dataset knows (digests,
size, supervised share)."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import PurePosixPath

from openrecipes.catalog.model import Dataset, Recipe
from openrecipes.errors import UserError
from openrecipes.rows.manifest import PACKING

ROWS_COMMAND = ("openrecipes", "rows")  # `rows build` and `rows demo` both take --out, --row-tokens and --rows
ROWS_FILE = "rows.parquet"


@dataclass(frozen=True)
class PlannedRows:
    dataset: Dataset
    path: str | None  # the rows file the run reads, where it is not the base's


def planned_rows(base: Recipe, row_tokens: int, global_batch: int) -> PlannedRows:
    """The rows a run of `base`'s steps at `global_batch` rows of `row_tokens` tokens reads (one row per sample, each
    step a global batch of them)."""
    dataset = base.workload.dataset
    build = dataset.build
    rows = global_batch * base.result.steps_per_run
    if build.row_tokens == row_tokens and build.rows >= rows:
        return PlannedRows(dataset, None)
    arguments = _rows_arguments(build.builder)
    if arguments is None:
        raise UserError(f"plan emit: the base recipe's rows come from `{build.builder}`, which this command cannot "
                        f"re-run at {row_tokens:,}-token rows; plan --row-tokens {build.row_tokens} "
                        f"--global-batch {base.workload.global_batch}, or build the rows with `openrecipes rows build`")
    out = f"{_option(arguments, '--out')}-{row_tokens}x{rows}"
    for option, value in (("--out", out), ("--row-tokens", str(row_tokens)), ("--rows", str(rows))):
        _set_option(arguments, option, value)
    name = _renamed(build.name, build.row_tokens, row_tokens)
    if _option(arguments, "--name") is not None:
        _set_option(arguments, "--name", name)
    planned = build.model_copy(update=dict(
        name=name, rows=rows, row_tokens=row_tokens, packing=PACKING.format(row_tokens=f"{row_tokens:,}"),
        supervised_token_ratio=None, parquet_sha256=None, parquet_bytes=None, builder=shlex.join(arguments)))
    return PlannedRows(dataset.model_copy(update=dict(rows_sha256=None, build=planned)),
                       str(PurePosixPath(out) / ROWS_FILE))


def _rows_arguments(builder: str) -> list[str] | None:
    try:
        arguments = shlex.split(builder)
    except ValueError:
        return None
    if tuple(arguments[:2]) != ROWS_COMMAND or _option(arguments, "--out") is None:
        return None
    return arguments


def _option(arguments: list[str], option: str) -> str | None:
    if option in arguments[:-1]:
        return arguments[arguments.index(option) + 1]
    return next((word.split("=", 1)[1] for word in arguments if word.startswith(option + "=")), None)


def _set_option(arguments: list[str], option: str, value: str) -> None:
    arguments[:] = [word for word in arguments if not word.startswith(option + "=")]
    if option in arguments[:-1]:
        arguments[arguments.index(option) + 1] = value
    else:
        arguments += [option, value]


def _renamed(name: str, old_row_tokens: int, row_tokens: int) -> str:
    """The build's name at the new length: the one `rows demo` and `rows build` give it by default (the length in
    place of the old one), else the old name with the length added."""
    old = str(old_row_tokens)
    return name.replace(old, str(row_tokens)) if old in name else f"{name}-{row_tokens}"
