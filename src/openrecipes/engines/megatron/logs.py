"""Megatron-LM / Megatron-Bridge and slime training logs, each read into the one step table.

- Megatron-LM / Megatron-Bridge: ` iteration N/ T | ... | elapsed time per iteration (ms): X | ... | lm loss: Y |
  ... | grad norm: Z |`. "iteration N" announces that step N - 1 finished (Megatron-Bridge's golden values count so).
- slime: `step N: {'train/loss': ..., 'train/grad_norm': ...}` and `perf N: {'perf/step_time': ...,
  'perf/max_cuda_memory_allocated_bytes': ...}` (Python dict reprs, numpy 2's `np.float64(12.7)` included; N counts
  from 0).
  Step N and perf N are joined: one optimizer step per rollout (global batch = rollout batch), as in every seed.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable
from pathlib import Path

from openrecipes.engines.knowledge import LogFormat
from openrecipes.errors import UserError
from openrecipes.steptable import Step, StepTable, read_count, read_number
from openrecipes.textfile import shown

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
GIB = 2**30


def read_megatron(path: Path, lines: Iterable[str]) -> StepTable:
    steps: list[Step] = []
    planned: int | None = None
    memory_gib: dict[int, float] = {}
    for number, line in enumerate(lines, start=1):
        if "iteration" not in line:  # a cheap test first: a long log is mostly other lines
            continue
        where = f"{shown(path)}:{number}"
        memory = _MEGATRON_MEMORY.search(line)
        allocated = memory and _MEGATRON_MAX_ALLOCATED.search(line, memory.end())
        if memory and allocated:
            after = read_count(memory.group(1), where, "iteration")
            memory_gib[after - 1] = read_number(allocated.group(1), where, "max allocated") / MIB_PER_GIB
        match = _MEGATRON_ITERATION.search(line)
        if not match:
            continue
        fields = {}
        for name, pattern in (("elapsed time per iteration (ms)", _MEGATRON_ELAPSED_MS), ("lm loss", _MEGATRON_LOSS)):
            found = pattern.search(line)
            if not found:
                raise UserError(f"{where}: iteration {match.group(1)} has no '{name}' (a skipped iteration "
                                "or a cut-off line); the log cannot be measured")
            fields[name] = read_number(found.group(1), where, name)
        grad = _MEGATRON_GRAD_NORM.search(line)
        planned = read_count(match.group(2), where, "iteration count")
        steps.append(Step(
            step=read_count(match.group(1), where, "iteration") - 1, where=where,
            step_time_s=fields["elapsed time per iteration (ms)"] / 1000.0, loss=fields["lm loss"],
            grad_norm=read_number(grad.group(1), where, "grad norm") if grad else None))
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
        kind, step, text = match.group(1), read_count(match.group(2), where, "step"), match.group(3)
        into = train if kind == "step" else perf
        if into and step < max(into):  # as measure.steps.require_in_order says of every other format
            raise UserError(f"{where}: step {step} comes after step {max(into)} ({into[max(into)][0]}); a log's "
                            "steps are in order, so its lines were reordered or two runs are mixed: give the log as "
                            "the run wrote it")
        if step in into:
            raise UserError(f"{where}: '{kind} {step}' is also at {into[step][0]}; give one rank's log of one run")
        into[step] = (where, _slime_dict(text, where))
    steps = []
    for step in sorted(set(train) | set(perf)):
        where, metrics = train.get(step) or perf[step]
        perf_metrics = perf.get(step, ("", {}))[1]
        memory = perf_metrics.get("perf/max_cuda_memory_allocated_bytes")
        steps.append(Step(
            step=step, where=where, step_time_s=perf_metrics.get("perf/step_time"),
            loss=metrics.get("train/loss") if step in train else None,
            grad_norm=metrics.get("train/grad_norm") if step in train else None,
            memory_gib=memory / GIB if memory is not None else None))
    return StepTable("slime", steps)


FORMATS = (LogFormat("megatron", _MEGATRON_ITERATION, "iteration", read_megatron),
           LogFormat("slime", _SLIME_LINE, ": {", read_slime))
