"""The training logs we measure, each read into the one step table; the format is detected from the lines.

Each engine's log formats and their readers live in its folder (engines/<name>/logs.py, listed by
engines/registry.py): Megatron-LM / Megatron-Bridge and slime (engines/megatron), torchtitan (engines/torchtitan).
This room adds our own format and reads a log whatever its engine:
- OpenRecipes JSONL: one JSON object per line with `step` (from 0) and any of `step_time_s`, `loss`,
  `grad_norm`, `memory_gib`, `time` (ISO 8601); other keys (`tokens`) are allowed and not read.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterable, Iterator
from datetime import datetime
from pathlib import Path

from openrecipes.engines.knowledge import LogFormat
from openrecipes.engines.registry import ENGINES
from openrecipes.errors import UserError
from openrecipes.measure.steps import check_log_steps
from openrecipes.steptable import MAX_STEP_DIGITS, TIMESTAMP, Step, StepTable, timestamp_of
from openrecipes.textfile import iter_lines, json_depth, shown

_JSONL_FIELDS = ("step_time_s", "loss", "grad_norm", "memory_gib")  # other keys (tokens) are allowed, not read
MAX_JSON_DEPTH = 16  # a row is flat; Python's json would recurse (and fail) on a line nested thousands deep
def json_row(line: str, where: str) -> object:
    """One JSON value of a JSON-lines file; nesting over MAX_JSON_DEPTH or a damaged line is a UserError."""
    if line.count("[") + line.count("{") > MAX_JSON_DEPTH and json_depth(line) > MAX_JSON_DEPTH:
        raise UserError(f"{where}: JSON nested deeper than {MAX_JSON_DEPTH} levels; a log row is one flat object")
    try:
        return json.loads(line)  # Python's json reads NaN and Infinity, so they reach the finiteness check
    except ValueError as error:  # JSONDecodeError, or an integer of thousands of digits
        reason = error.msg if isinstance(error, json.JSONDecodeError) else str(error)
        raise UserError(f"{where}: not a JSON object ({reason}); the line is damaged or cut off") from None


def _jsonl_number(row: dict, name: str, where: str) -> float | None:
    value = row.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise UserError(f"{where}: '{name}' must be a number, not {str(value)[:40]!r}")
    try:
        return float(value)
    except OverflowError:
        raise UserError(f"{where}: '{name}' is too large to be a figure; the line is damaged") from None


def read_jsonl(path: Path, lines: Iterable[str]) -> StepTable:
    steps = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{shown(path)}:{number}"
        row = json_row(line, where)
        step = row.get("step") if isinstance(row, dict) else None
        if not isinstance(row, dict) or isinstance(step, bool) or not isinstance(step, int) \
                or not 0 <= step < 10**MAX_STEP_DIGITS:
            raise UserError(f"{where}: each line needs an integer 'step' (numbered from 0)")
        steps.append(Step(step=step, where=where, **{name: _jsonl_number(row, name, where) for name in _JSONL_FIELDS}))
    return StepTable("jsonl", steps)


def _is_jsonl(first: str) -> bool:
    """A JSON-lines log starts with a row object holding "step"; whether the row is sound, read_jsonl says."""
    return first.lstrip().startswith("{") and '"step"' in first


# Each engine's text formats, by name.
_FORMATS: dict[str, LogFormat] = {log_format.name: log_format
                                  for engine in ENGINES for log_format in engine.log_formats}


def step_line_patterns() -> list[tuple[str, re.Pattern[str]]]:
    """The step line of every text format (a word each such line holds, and the line): what its reader reads."""
    return [(log_format.word, log_format.step_line) for log_format in _FORMATS.values()]


def prints_stack(log_format: str) -> bool:
    """Whether a log of this format holds the `openrecipes stack:` line (our entry module prints it on rank 0)."""
    return log_format in _FORMATS and _FORMATS[log_format].prints_stack


def detect_format(path: Path, lines: Iterable[str]) -> str:
    """The log's format: JSON lines when its first line is a row, else the one text format whose step lines it
    holds (every line is looked at: a log mixing two frameworks' lines is refused)."""
    lines = iter(lines)
    first = next((line for line in lines if line.strip()), "")
    if _is_jsonl(first):
        return "jsonl"
    found = set()
    for line in itertools.chain([first], lines):
        for name, log_format in _FORMATS.items():
            if name not in found and log_format.word in line and log_format.step_line.search(line):
                found.add(name)
    if not found:
        raise UserError(f"{shown(path)}: no training step lines of a known format (Megatron, slime, torchtitan, "
                        "OpenRecipes JSONL); give the training log itself")
    if len(found) > 1:
        raise UserError(f"{shown(path)}: step lines of several formats ({', '.join(sorted(found))}); "
                        "give one framework's log")
    return found.pop()


# Terminal colour codes: torchtitan colours its log lines by default, which would hide the step lines.
_ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def strip_colour(text: str) -> str:
    return _ANSI_ESCAPE.sub("", text) if "\x1b" in text else text


def log_lines(path: Path) -> Iterator[str]:
    """A log's lines, terminal colour codes removed, read as a stream: a log of any size in constant memory."""
    return map(strip_colour, iter_lines(path))


def read_log_lines(path: Path) -> list[str]:
    """A (small) log's lines with terminal colour codes removed."""
    return list(log_lines(path))


class _TimeSpan:
    """The earliest and latest timestamps of the lines passed through it."""

    def __init__(self) -> None:
        self.first: datetime | None = None
        self.last: datetime | None = None

    def watch(self, lines: Iterable[str]) -> Iterator[str]:
        seen = ""  # the last timestamp's text: consecutive lines mostly share it, and parsing is the cost
        for line in lines:
            match = TIMESTAMP.search(line)
            if match and match.group() != seen:
                seen = match.group()
                stamp = timestamp_of(seen)
                if stamp is not None:
                    self.first = stamp if self.first is None else min(self.first, stamp)
                    self.last = stamp if self.last is None else max(self.last, stamp)
            yield line


def read_log(path: Path) -> StepTable:
    """One log file as a step table, its format detected; timestamps span every line of the file. The file is read
    twice as a stream (once to detect the format, once to read it), never held whole. The one reader of step lines:
    its steps are in order, each once, none missing (measure.steps.check_log_steps), whoever reads them."""
    log_format = detect_format(path, log_lines(path))
    reader = read_jsonl if log_format == "jsonl" else _FORMATS[log_format].read
    span = _TimeSpan()
    table = reader(path, span.watch(log_lines(path)))
    table.first_timestamp, table.last_timestamp = span.first, span.last
    table.sources = [str(path)]
    check_log_steps(table)
    return table
