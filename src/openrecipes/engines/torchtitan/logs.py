"""torchtitan training logs, read into the one step table, whole or one line at a time as a run prints them.

`step: N  loss: ...  grad_norm: ...  memory: ...GiB(...)  tps: ...` (N counts from 1). torchtitan prints tokens/s
per GPU, not a step time; a step's duration is the time between its line's timestamp and the previous step line's
(the first step's from the "Training starts at step" line, so it includes compilation). One rank's lines are read:
the first `[rankN]:` seen, or without prefixes the first line of each step. Timestamps rather than tokens / tps:
the window's total is then exactly the wall time its steps took, and tps is printed rounded to whole tokens.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path

from openrecipes.engines.knowledge import LogFormat
from openrecipes.errors import UserError
from openrecipes.steptable import Step, StepTable, read_count, read_number, timestamp_of
from openrecipes.textfile import shown

_TITAN_STEP = re.compile(r"\bstep:\s*(\d+)\s+loss:\s*(\S+)")
_TITAN_GRAD_NORM = re.compile(r"\bgrad_norm:\s*(\S+)")
_TITAN_MEMORY = re.compile(r"\bmemory:\s*([\d.]+)GiB")
_TITAN_START = re.compile(r"Training starts at step \d+")
_TITAN_TOTAL = re.compile(r"\btotal steps (\d+)")
# torchtitan's dataloader ran dry: the step after the last logged one was canceled and training ended cleanly.
_TITAN_OUT_OF_DATA = "Ran out of data; last step was canceled."
_TITAN_RANK = re.compile(r"^\[rank(\d+)\]:")


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
        step=read_count(match.group(1), where, "step") - 1, where=where,
        step_time_s=(now - previous_time).total_seconds() if previous_time is not None else None,
        loss=read_number(match.group(2), where, "loss"),
        grad_norm=read_number(grad.group(1), where, "grad_norm") if grad else None,
        memory_gib=read_number(memory.group(1), where, "memory") if memory else None)


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
            self.planned = read_count(total.group(1), where, "total steps")
        match = _TITAN_STEP.search(line)
        if not match:
            return None
        if not rank:
            number = read_count(match.group(1), where, "step")
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


FORMAT = LogFormat("torchtitan", _TITAN_STEP, "step:", read_torchtitan, prints_stack=True)
