"""The checks a step table (openrecipes.steptable) must pass before it is measured, and several logs as one table."""

from __future__ import annotations

import math
from itertools import pairwise

from openrecipes.errors import UserError
from openrecipes.steptable import StepTable


def merge(tables: list[StepTable]) -> StepTable:
    """Several logs of one run (restarts, one file per node) as one table, in step order."""
    formats = sorted({t.log_format for t in tables})
    if len(formats) > 1:
        raise UserError(f"the logs are of different formats ({', '.join(formats)}); give the logs of one run")
    stamps = [s for t in tables for s in (t.first_timestamp, t.last_timestamp) if s is not None]
    planned = [t.planned_steps for t in tables if t.planned_steps is not None]
    return StepTable(
        log_format=formats[0], steps=sorted((s for t in tables for s in t.steps), key=lambda s: s.step),
        first_timestamp=min(stamps, default=None), last_timestamp=max(stamps, default=None),
        planned_steps=max(planned, default=None), sources=[src for t in tables for src in t.sources],
        # Only the log holding the run's last step can say why the run ended there.
        out_of_data=max(tables, key=lambda t: t.steps[-1].step if t.steps else -1).out_of_data)


def require_in_order(table: StepTable) -> None:
    """One log's steps come in the order the run wrote them: a step number at or below the one before it is a
    line written twice, lines reordered, or two runs mixed into one file."""
    for before, after in pairwise(table.steps):
        if after.step == before.step:
            raise UserError(f"{after.where}: step {after.step} is also at {before.where}; give one rank's log of one "
                            "run")
        if after.step < before.step:
            raise UserError(f"{after.where}: step {after.step} comes after step {before.step} ({before.where}); a "
                            "log's steps are in order, so its lines were reordered or two runs are mixed: give the "
                            "log as the run wrote it")


def check_log_steps(table: StepTable) -> None:
    """What every reader of a log's step lines refuses, before any figure is computed from them (measure, check
    convergence, audit, tune all read logs through measure.formats.read_log, which calls this)."""
    require_in_order(table)
    require_contiguous_steps(table)


def require_contiguous_steps(table: StepTable) -> None:
    """Every step from the first to the last is present: a gap would silently shorten a window."""
    for before, after in pairwise(table.steps):
        if after.step != before.step + 1:
            missing = f"{before.step + 1}" if after.step == before.step + 2 else f"{before.step + 1}-{after.step - 1}"
            raise UserError(f"{after.where}: steps {missing} are missing before step {after.step}; "
                            "log every step (Megatron --log-interval 1, torchtitan --metrics.log_freq 1)")


def require_finite(table: StepTable) -> None:
    for step in table.steps:
        for name in ("step_time_s", "loss", "grad_norm", "memory_gib"):
            value = getattr(step, name)
            if value is not None and not math.isfinite(value):
                raise UserError(f"{step.where}: step {step.step} has {name} = {value}; a run with a non-finite "
                                "value is not a result, fix the run and measure again")


MAX_STEP_SECONDS = 366 * 24 * 3600.0  # one optimizer step longer than a year is a damaged line, not a run


def require_positive_step_times(table: StepTable) -> None:
    """A step takes a positive time: zero or negative is a damaged line or a clock that stepped back (torchtitan's
    times are read from timestamps), and dividing by it would give an absurd or infinite figure."""
    for step in table.steps:
        seconds = step.step_time_s
        if seconds is not None and not 0 < seconds <= MAX_STEP_SECONDS:
            why = "the clock stepped back or the line is damaged" if seconds <= 0 else "longer than a year"
            raise UserError(f"{step.where}: step {step.step} took {seconds:g} s ({why}); a step time must be "
                            "positive; fix the log or start the window after it")


def require_complete_run(table: StepTable, steps_per_run: int | None) -> None:
    """A log that stops before the run's last step was cut off (or the run died): never measure it silently. A log
    that states its data ran out ended there truthfully: its run is the steps it holds."""
    if not table.steps:
        raise UserError(f"{', '.join(table.sources)}: no training steps found")
    if table.out_of_data is not None:
        return
    expected = steps_per_run if steps_per_run is not None else table.planned_steps
    last = table.steps[-1]
    if expected is not None and last.step + 1 < expected:
        raise UserError(f"{last.where}: the log ends at step {last.step} but the run has {expected} steps "
                        f"(0-{expected - 1}); the log is truncated or the run stopped early")


def check_for_measure(table: StepTable, steps_per_run: int | None) -> None:
    """What a merged table (in step order: measure.result.read_run) must pass before it is measured: a step given
    twice is refused as one log's step line written twice is."""
    check_log_steps(table)
    require_finite(table)
    require_positive_step_times(table)
    require_complete_run(table, steps_per_run)
