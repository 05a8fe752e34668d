"""One short run of a candidate through the engine, read back with openrecipes.measure."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from openrecipes.catalog.hardware import ReferenceTables, load_reference_tables
from openrecipes.catalog.model import Recipe
from openrecipes.engines.torchtitan.render import run_launch
from openrecipes.errors import UserError
from openrecipes.plan.tune.candidates import (
    CONFIDENCE_SIGMAS, OOM_MARKERS, PROCESS_START_MINUTES, Runner, WINDOW_FIRST_STEP,
)


@dataclass(frozen=True)
class Measurement:
    log: Path
    minutes: float  # device wall time: the log's first to last timestamp plus the process start
    tokens_per_s_per_gpu: float | None = None
    step_time_cv_percent: float | None = None
    window: tuple[int, int] | None = None
    peak_memory_gib: float | None = None
    result: dict | None = None
    oom: bool = False
    error: str | None = None
    stack: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.tokens_per_s_per_gpu is not None

    def _half_width(self) -> float:
        n = self.window[1] - self.window[0] + 1
        return CONFIDENCE_SIGMAS * (self.step_time_cv_percent / 100) / math.sqrt(n)

    @property
    def optimistic(self) -> float:
        return self.tokens_per_s_per_gpu * (1 + self._half_width())

    @property
    def pessimistic(self) -> float:
        return self.tokens_per_s_per_gpu * (1 - self._half_width())


_STACK = re.compile(r"openrecipes stack: (.*)$")


def _stack_line(lines: list[str]) -> dict[str, str]:
    for line in lines:
        match = _STACK.search(line)
        if match:
            return dict(word.split("=", 1) for word in match.group(1).split(" ") if "=" in word)
    return {}


def _minutes(first: datetime | None, last: datetime | None) -> float:
    seconds = (last - first).total_seconds() if first is not None and last is not None else 0.0
    return PROCESS_START_MINUTES + seconds / 60


def _log_minutes(lines: list[str]) -> float:
    """The minutes of a log that has no step table (a failed run): its first to last timestamp."""
    from openrecipes.measure.formats import timestamp_of

    stamps = [t for t in map(timestamp_of, lines) if t is not None]
    return _minutes(min(stamps, default=None), max(stamps, default=None))


def measure_candidate(recipe: Recipe, steps: int, out_dir: Path, runner: Runner | None = None,
                      tables: ReferenceTables | None = None) -> Measurement:
    """Run `recipe` for `steps` steps through the engines' execution path and measure its log with
    openrecipes.measure over the steps after warm-up. An out-of-memory exit is a Measurement with oom set."""
    from openrecipes.engines.execute import execute
    from openrecipes.measure.formats import read_log_lines
    from openrecipes.measure.result import measure, read_run, run_inputs

    tables = tables or load_reference_tables()
    card = tables.models[recipe.model]
    launch = run_launch(recipe, card, steps)
    tokens_per_step = recipe.workload.global_batch * recipe.workload.row_tokens
    log = out_dir / "train.log"
    try:
        log = (runner or execute)(launch, out_dir, tokens_per_step=tokens_per_step)
    except UserError as error:
        lines = read_log_lines(log) if log.exists() else []
        oom = any(marker in line for line in lines for marker in OOM_MARKERS)
        return Measurement(log, _log_minutes(lines), oom=oom, error=str(error))
    # A candidate's recipe is the base's with another layout: its active parameters are the model card's.
    inputs = run_inputs(recipe, tables, steps_per_run=steps, window=(WINDOW_FIRST_STEP, steps - 1))
    try:
        table = read_run([log])
        result = measure(table, inputs, None)
    except UserError as error:
        return Measurement(log, _log_minutes(read_log_lines(log) if log.exists() else []), error=str(error))
    window = tuple(result["window"])
    memory = [s.memory_gib for s in table.steps if window[0] <= s.step <= window[1] and s.memory_gib is not None]
    minutes = _minutes(table.first_timestamp, table.last_timestamp)
    return Measurement(log, minutes, result["tokens_per_s_per_gpu"], result["step_time_cv_percent"],
                       window, max(memory, default=None), result, stack=_stack_line(read_log_lines(log)))
