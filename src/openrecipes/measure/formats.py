"""Readers of the training logs we measure, each into the one step table; the format is detected from the lines.

- Megatron-LM / Megatron-Bridge: ` iteration N/ T | ... | elapsed time per iteration (ms): X | ... | lm loss: Y |
  ... | grad norm: Z |`. "iteration N" announces that step N - 1 finished (Megatron-Bridge's golden values count so).
- slime: `step N: {'train/loss': ..., 'train/grad_norm': ...}` and `perf N: {'perf/step_time': ...,
  'perf/max_cuda_memory_allocated_bytes': ...}` (Python dict reprs, numpy 2's `np.float64(12.7)` included; N counts
  from 0).
  Step N and perf N are joined: one optimizer step per rollout (global batch = rollout batch), as in every seed.
- torchtitan: `step: N  loss: ...  grad_norm: ...  memory: ...GiB(...)  tps: ...` (N counts from 1). torchtitan
  prints tokens/s per GPU, not a step time; a step's duration is the time between its line's timestamp and the
  previous step line's (the first step's from the "Training starts at step" line, so it includes compilation).
  One rank's lines are read: the first `[rankN]:` seen, or without prefixes the first line of each step.
  Timestamps rather than tokens / tps: the window's total is then exactly the wall time its steps took,
  and tps is printed rounded to whole tokens.
- OpenRecipes JSONL: one JSON object per line with `step` (from 0) and any of `step_time_s`, `loss`,
  `grad_norm`, `memory_gib`, `time` (ISO 8601); other keys (`tokens`) are allowed and not read.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import re
from collections.abc import Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Callable

from openrecipes.errors import UserError
from openrecipes.measure.steps import Step, StepTable
from openrecipes.textfile import iter_lines, shown

# The first date and time on a line: Megatron's "[2026-10-14 10:00:00]", Python logging's "2026-11-30 01:04:02,276".
_TIMESTAMP = re.compile(r"(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2})(?:[.,](\d{1,6}))?")

_MEGATRON_ITERATION = re.compile(r"\biteration\s+(\d+)\s*/\s*(\d+)\s*\|")
_MEGATRON_ELAPSED_MS = re.compile(r"elapsed time per iteration \(ms\):\s*([^\s|]+)")
_MEGATRON_LOSS = re.compile(r"\blm loss:\s*([^\s|]+)")
_MEGATRON_GRAD_NORM = re.compile(r"\bgrad norm:\s*([^\s|]+)")
# Megatron's memory report after the first logged iterations: "(after N iterations) memory (MB) | ... |
# max allocated: X |"; its figure belongs to step N - 1.
# Two searches, not one pattern with `.*?` between them: that would rescan the line from every repeat of its start.
_MEGATRON_MEMORY = re.compile(r"\(after (\d+) iterations\) memory \(MB\)")
_MEGATRON_MAX_ALLOCATED = re.compile(r"\bmax allocated:\s*([^\s|]+)")
MIB_PER_GIB = 1024.0

_SLIME_LINE = re.compile(r"\b(step|perf) (\d+): (\{.*)$")
# A value as Python prints it: `21.4`, or under numpy 2 `np.float64(21.4)` (slime logs numpy scalars as they are).
_SLIME_PAIR = re.compile(r"'([^']+)':\s*(?:np\.\w+\(([^,}()]+)\)|([^,}]+))")

_TITAN_STEP = re.compile(r"\bstep:\s*(\d+)\s+loss:\s*(\S+)")
_TITAN_GRAD_NORM = re.compile(r"\bgrad_norm:\s*(\S+)")
_TITAN_MEMORY = re.compile(r"\bmemory:\s*([\d.]+)GiB")
_TITAN_START = re.compile(r"Training starts at step \d+")
_TITAN_TOTAL = re.compile(r"\btotal steps (\d+)")
_TITAN_RANK = re.compile(r"^\[rank(\d+)\]:")
# torchtitan's dataloader ran dry: the step after the last logged one was canceled and training ended cleanly.
_TITAN_OUT_OF_DATA = "Ran out of data; last step was canceled."

GIB = 2**30


def timestamp_of(line: str) -> datetime | None:
    match = _TIMESTAMP.search(line)
    if not match:
        return None
    day, clock, fraction = match.groups()
    try:
        return datetime.fromisoformat(f"{day} {clock}.{(fraction or '0').ljust(6, '0')}")
    except ValueError:
        return None


MAX_STEP_DIGITS = 15  # a step or iteration number is a count, not a 400-digit figure


def _count(text: str, where: str, what: str) -> int:
    if len(text) > MAX_STEP_DIGITS:
        raise UserError(f"{where}: {what} {text[:20]}... has over {MAX_STEP_DIGITS} digits; the line is damaged")
    return int(text)


def _number(text: str, where: str, what: str) -> float:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        raise UserError(f"{where}: {what} '{text}' is not a number; the line is damaged or cut off") from None


def read_megatron(path: Path, lines: Iterable[str]) -> StepTable:
    steps, planned, memory_gib = [], None, {}
    for number, line in enumerate(lines, start=1):
        if "iteration" not in line:  # a cheap test first: a long log is mostly other lines
            continue
        memory = _MEGATRON_MEMORY.search(line)
        allocated = memory and _MEGATRON_MAX_ALLOCATED.search(line, memory.end())
        if allocated:
            where = f"{shown(path)}:{number}"
            after = _count(memory.group(1), where, "iteration")
            memory_gib[after - 1] = _number(allocated.group(1), where, "max allocated") / MIB_PER_GIB
        match = _MEGATRON_ITERATION.search(line)
        if not match:
            continue
        where = f"{shown(path)}:{number}"
        fields = {}
        for name, pattern in (("elapsed time per iteration (ms)", _MEGATRON_ELAPSED_MS), ("lm loss", _MEGATRON_LOSS)):
            found = pattern.search(line)
            if not found:
                raise UserError(f"{where}: iteration {match.group(1)} has no '{name}' (a skipped iteration "
                                "or a cut-off line); the log cannot be measured")
            fields[name] = _number(found.group(1), where, name)
        grad = _MEGATRON_GRAD_NORM.search(line)
        planned = _count(match.group(2), where, "iteration count")
        steps.append(Step(
            step=_count(match.group(1), where, "iteration") - 1,
            where=where,
            step_time_s=fields["elapsed time per iteration (ms)"] / 1000.0,
            loss=fields["lm loss"],
            grad_norm=_number(grad.group(1), where, "grad norm") if grad else None,
        ))
    steps = [dataclasses.replace(s, memory_gib=memory_gib[s.step]) if s.step in memory_gib else s for s in steps]
    return StepTable("megatron", steps, planned_steps=planned)


def _slime_dict(text: str, where: str) -> dict[str, float]:
    if not text.rstrip().endswith("}"):
        raise UserError(f"{where}: the metrics dict is cut off (no closing '}}'); the log looks truncated")
    values = {}
    for key, wrapped, plain in _SLIME_PAIR.findall(text):
        try:
            values[key] = float((wrapped or plain).strip())
        except ValueError:
            continue  # a non-numeric entry (a string, a list) is not a figure we read
    return values


def read_slime(path: Path, lines: Iterable[str]) -> StepTable:
    train: dict[int, tuple[str, dict[str, float]]] = {}
    perf: dict[int, tuple[str, dict[str, float]]] = {}
    for number, line in enumerate(lines, start=1):
        match = _SLIME_LINE.search(line)
        if not match:
            continue
        where = f"{shown(path)}:{number}"
        kind, step, text = match.group(1), _count(match.group(2), where, "step"), match.group(3)
        into = train if kind == "step" else perf
        if step in into:
            raise UserError(f"{where}: '{kind} {step}' is also at {into[step][0]}; give one rank's log of one run")
        into[step] = (where, _slime_dict(text, where))
    steps = []
    for step in sorted(set(train) | set(perf)):
        where, metrics = train.get(step) or perf[step]
        perf_metrics = perf.get(step, ("", {}))[1]
        memory = perf_metrics.get("perf/max_cuda_memory_allocated_bytes")
        steps.append(Step(
            step=step,
            where=where,
            step_time_s=perf_metrics.get("perf/step_time"),
            loss=metrics.get("train/loss") if step in train else None,
            grad_norm=metrics.get("train/grad_norm") if step in train else None,
            memory_gib=memory / GIB if memory is not None else None,
        ))
    return StepTable("slime", steps)


def torchtitan_step(line: str, where: str, previous_time: datetime | None) -> Step | None:
    """One torchtitan step line as a Step (its time since `previous_time`, the previous step line's or the start
    line's timestamp), or None for any other line."""
    match = _TITAN_STEP.search(line)
    if not match:
        return None
    now = timestamp_of(line)
    if now is None:
        raise UserError(f"{where}: the step line has no timestamp; torchtitan's step time is read from them")
    grad, memory = _TITAN_GRAD_NORM.search(line), _TITAN_MEMORY.search(line)
    return Step(
        step=_count(match.group(1), where, "step") - 1,
        where=where,
        step_time_s=(now - previous_time).total_seconds() if previous_time is not None else None,
        loss=_number(match.group(2), where, "loss"),
        grad_norm=_number(grad.group(1), where, "grad_norm") if grad else None,
        memory_gib=_number(memory.group(1), where, "memory") if memory else None,
    )


class TorchtitanReader:
    """torchtitan's lines fed one at a time (a finished log, or a live run's output as it arrives), each parsed once.

    Every rank prints the same step lines. With `[rankN]:` prefixes the first rank seen is the run's; without them
    (every rank printed to one stream) the first line of each step is kept and the other ranks' copies skipped."""

    def __init__(self) -> None:
        self.planned: int | None = None
        self._rank: str | None = None
        self._previous_time: datetime | None = None
        self._started = False  # a start line was seen since the last step line kept
        self._seen: set[int] = set()  # step numbers of unprefixed step lines
        self.out_of_data: str | None = None  # where the log says the data ran out

    def feed(self, line: str, where: str) -> Step | None:
        """The step `line` adds to the run, or None (another line, or another rank's copy of a step)."""
        rank = _TITAN_RANK.match(line)
        if rank:
            self._rank = self._rank if self._rank is not None else rank.group(1)
            if rank.group(1) != self._rank:
                return None
        if _TITAN_START.search(line) and (rank or not self._started):
            self._previous_time, self._started = timestamp_of(line), True
        if _TITAN_OUT_OF_DATA in line:
            self.out_of_data = where
        total = _TITAN_TOTAL.search(line)
        if total:
            self.planned = _count(total.group(1), where, "total steps")
        match = _TITAN_STEP.search(line)
        if not match:
            return None
        if not rank:
            number = _count(match.group(1), where, "step")
            if number in self._seen:
                return None
            self._seen.add(number)
        step = torchtitan_step(line, where, self._previous_time)
        self._previous_time, self._started = timestamp_of(line), False
        return step


def read_torchtitan(path: Path, lines: Iterable[str]) -> StepTable:
    reader = TorchtitanReader()
    steps = [step for number, line in enumerate(lines, start=1)
             if (step := reader.feed(line, f"{shown(path)}:{number}")) is not None]
    return StepTable("torchtitan", steps, planned_steps=reader.planned, out_of_data=reader.out_of_data)


_JSONL_FIELDS = ("step_time_s", "loss", "grad_norm", "memory_gib")  # other keys (tokens) are allowed, not read
MAX_JSON_DEPTH = 16  # a row is flat; Python's json would recurse (and fail) on a line nested thousands deep
_JSON_NESTING = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def _json_depth(line: str) -> int:
    depth = deepest = 0
    for token in _JSON_NESTING.finditer(line):
        bracket = token.group()
        if bracket in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif bracket in "]}":
            depth -= 1
    return deepest


def json_row(line: str, where: str) -> object:
    """One JSON value of a JSON-lines file; nesting over MAX_JSON_DEPTH or a damaged line is a UserError."""
    if line.count("[") + line.count("{") > MAX_JSON_DEPTH and _json_depth(line) > MAX_JSON_DEPTH:
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
        if isinstance(step, bool) or not isinstance(step, int) or not 0 <= step < 10**MAX_STEP_DIGITS:
            raise UserError(f"{where}: each line needs an integer 'step' (numbered from 0)")
        steps.append(Step(step=step, where=where, **{name: _jsonl_number(row, name, where) for name in _JSONL_FIELDS}))
    return StepTable("jsonl", steps)


def _is_jsonl(first: str) -> bool:
    """A JSON-lines log starts with a row object holding "step"; whether the row is sound, read_jsonl says."""
    return first.lstrip().startswith("{") and '"step"' in first


Reader = Callable[[Path, Iterable[str]], StepTable]
# Each text format with the line that identifies it, and a word every such line holds (a cheap test first).
_SIGNATURES: dict[str, tuple[re.Pattern, Reader, str]] = {
    "megatron": (_MEGATRON_ITERATION, read_megatron, "iteration"),
    "slime": (_SLIME_LINE, read_slime, ": {"),
    "torchtitan": (_TITAN_STEP, read_torchtitan, "step:"),
}


def detect_format(path: Path, lines: Iterable[str]) -> str:
    """The log's format: JSON lines when its first line is a row, else the one text format whose step lines it
    holds (every line is looked at: a log mixing two frameworks' lines is refused)."""
    lines = iter(lines)
    first = next((line for line in lines if line.strip()), "")
    if _is_jsonl(first):
        return "jsonl"
    found = set()
    for line in itertools.chain([first], lines):
        for name, (pattern, _, word) in _SIGNATURES.items():
            if name not in found and word in line and pattern.search(line):
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
    """`text` without terminal colour codes."""
    return _ANSI_ESCAPE.sub("", text) if "\x1b" in text else text


def log_lines(path: Path) -> Iterator[str]:
    """A log's lines, terminal colour codes removed, read as a stream: a log of any size in constant memory."""
    for line in iter_lines(path):
        yield strip_colour(line)


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
            match = _TIMESTAMP.search(line)
            if match and match.group() != seen:
                seen = match.group()
                stamp = timestamp_of(seen)
                if stamp is not None:
                    self.first = stamp if self.first is None else min(self.first, stamp)
                    self.last = stamp if self.last is None else max(self.last, stamp)
            yield line


def read_log(path: Path) -> StepTable:
    """One log file as a step table, its format detected; timestamps span every line of the file. The file is read
    twice as a stream (once to detect the format, once to read it), never held whole."""
    log_format = detect_format(path, log_lines(path))
    reader = read_jsonl if log_format == "jsonl" else _SIGNATURES[log_format][1]
    span = _TimeSpan()
    table = reader(path, span.watch(log_lines(path)))
    table.first_timestamp, table.last_timestamp = span.first, span.last
    table.sources = [str(path)]
    return table
