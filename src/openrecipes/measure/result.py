"""A run's `result:` block from its step table: every figure through figures.py, over a window of steps.

tokens/s per GPU = window tokens / (sum of the window's step times) / GPUs, step-time CV over the window,
GPU-hours from the logs' first and last timestamps. The stored figures are figures.STORED, each rounded to the
decimals it is published with.
"""

from __future__ import annotations

import dataclasses
import datetime
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast, overload

from openrecipes import figures
from openrecipes.errors import UserError
from openrecipes.measure.formats import read_log
from openrecipes.measure.steps import check_for_measure, merge
from openrecipes.steptable import StepTable

if TYPE_CHECKING:  # the catalog (pydantic) is imported only when a recipe is given
    from openrecipes.catalog.hardware import ReferenceTables
    from openrecipes.catalog.model import Recipe

@dataclass(frozen=True)
class Measured:
    """A run's figures over a window, rounded as published; those that need the recipe are None without one."""

    tokens_per_s_per_gpu: float | None
    usd_per_million_tokens: float | None
    step_time_cv_percent: float
    mfu: float | None
    window: tuple[int, int]
    window_tokens: int | None
    gpu_hours: float | None
    steps_per_run: int
    measured: datetime.date | None  # the date of the log's last timestamp
    log_format: str
    window_seconds: float
    # Why the run has fewer steps than it planned, where its log says so (torchtitan ran out of data); else None.
    ended_early: str | None = None

    def as_json(self) -> dict:
        """The figures as `measure --json` prints them (window a list, the date ISO text)."""
        return {**dataclasses.asdict(self), "window": list(self.window),
                "measured": self.measured.isoformat() if self.measured else None}


@dataclass(frozen=True)
class RecipeMeasured(Measured):
    """A run's figures measured with its recipe's inputs: throughput, cost and MFU are known."""

    tokens_per_s_per_gpu: float
    usd_per_million_tokens: float
    mfu: float
    window_tokens: int


@dataclass(frozen=True)
class RunInputs:
    """What a result needs besides the logs; read from the recipe."""

    gpus: int
    global_batch: int
    row_tokens: int
    active_params: int
    peak_flops_per_gpu: float
    usd_per_gpu_hour: float
    steps_per_run: int
    window: tuple[int, int]


def recipe_tables(recipe_path: Path) -> ReferenceTables:
    """The hardware and model tables of the recipe's own catalog (a fork's hardware/instances.yaml), else the
    bundled ones."""
    from openrecipes.catalog.hardware import load_reference_tables
    from openrecipes.catalog.paths import catalog_root

    return load_reference_tables(catalog_root(recipe_path))


def clip_window(window: tuple[int, int], steps: int) -> tuple[int, int]:
    """A recipe's window moved into a run of `steps` steps: its last step at most the run's last, and (where the
    run allows) at least two steps, the fewest the step-time CV needs."""
    last = min(window[1], steps - 1)
    return max(0, min(window[0], last - 1)), last


def run_inputs(recipe: Recipe, tables: ReferenceTables | None = None, steps_per_run: int | None = None,
               window: tuple[int, int] | None = None) -> RunInputs:
    """The inputs of a loaded recipe; steps_per_run and window default to its result block's. `tables` are the
    hardware tables prices and peaks come from (default: the bundled catalog's)."""
    from openrecipes.catalog.hardware import peak_flops, usd_per_gpu_hour

    return RunInputs(
        gpus=recipe.gpu.count, global_batch=recipe.workload.global_batch, row_tokens=recipe.workload.row_tokens,
        active_params=recipe.result.active_params.count, peak_flops_per_gpu=peak_flops(recipe.gpu.variant, tables),
        usd_per_gpu_hour=usd_per_gpu_hour(recipe.gpu.instance, tables),
        steps_per_run=steps_per_run if steps_per_run is not None else recipe.result.steps_per_run,
        window=window if window is not None else recipe.result.window)


def inputs_from_recipe(path: Path) -> RunInputs:
    """The inputs, read through the typed schema but not its figure checks: a recipe whose result block is stale
    or a placeholder (the reason to measure it) still gives its GPUs, batch and window. Prices and peaks come from
    the recipe's own catalog."""
    from pydantic import ValidationError  # the catalog (pydantic) only when a recipe is given

    from openrecipes.catalog.model import Recipe
    from openrecipes.catalog.store import load_recipe
    from openrecipes.catalog.validate import parse_entry
    from openrecipes.catalog.yamlio import read_yaml

    try:
        recipe = parse_entry(read_yaml(Path(path)))
    except ValidationError:
        recipe = load_recipe(path)  # raises the catalog's error naming the field and line
    if not isinstance(recipe, Recipe):
        raise UserError(f"{path}: a published summary entry, not a runnable recipe; give the recipe that ran")
    return run_inputs(recipe, recipe_tables(path))


def read_run(logs: list[Path]) -> StepTable:
    if not logs:
        raise UserError("give at least one log file")
    return merge([read_log(Path(log)) for log in logs])


def window_step_times(table: StepTable, window: tuple[int, int]) -> list[float]:
    first, last = window
    run_first, run_last = table.steps[0].step, table.steps[-1].step
    if first > last:
        raise UserError(f"window [{first}, {last}] ends before it starts; give FIRST LAST with FIRST <= LAST")
    if first < run_first or last > run_last:
        raise UserError(f"window [{first}, {last}] is outside the run's steps {run_first}-{run_last} "
                        "(steps are numbered from 0; both ends are included)")
    scored = [s for s in table.steps if first <= s.step <= last]
    if len(scored) < 2:
        raise UserError(f"window [{first}, {last}] holds one step; the step-time CV needs at least two")
    times = []
    for step in scored:
        if step.step_time_s is None:
            raise UserError(f"{step.where}: step {step.step} has no step time (slime: no 'perf {step.step}' line; "
                            "torchtitan: the first step line with no 'Training starts' line before it); "
                            "start the window later")
        times.append(step.step_time_s)
    return times


def _ended_early(table: StepTable, steps_per_run: int | None) -> str | None:
    """The note a run that ran out of data carries: the steps it ran of those it planned, and where it says so."""
    if table.out_of_data is None:
        return None
    planned = steps_per_run if steps_per_run is not None else table.planned_steps
    ran = table.steps[-1].step + 1
    of_planned = f" of the {planned} planned" if planned is not None else ""
    return f"the data ran out: {ran}{of_planned} steps ran (steps 0-{ran - 1}; {table.out_of_data})"


def _figure_inputs(run: RunInputs | None, tokens: int | None, step_times: list[float],
                   elapsed: float | None) -> figures.Inputs:
    """What the figures are worked out from: without the recipe, only the step times."""
    if run is None or tokens is None:
        return figures.Inputs(step_times=tuple(step_times))
    return figures.Inputs(
        tokens_per_s_per_gpu=figures.tokens_per_s_per_gpu(tokens, sum(step_times), run.gpus), gpus=run.gpus,
        active_params=run.active_params, peak_flops_per_gpu=run.peak_flops_per_gpu,
        usd_per_gpu_hour=run.usd_per_gpu_hour, step_times=tuple(step_times), elapsed_seconds=elapsed)


@overload
def measure(table: StepTable, inputs: RunInputs, window: tuple[int, int] | None) -> RecipeMeasured: ...
@overload
def measure(table: StepTable, inputs: RunInputs | None, window: tuple[int, int] | None) -> Measured: ...
def measure(table: StepTable, inputs: RunInputs | None, window: tuple[int, int] | None) -> Measured:
    """The measured figures; those that need the recipe are None without one."""
    check_for_measure(table, inputs.steps_per_run if inputs else None)
    window = window or (inputs.window if inputs else None)
    if window is None:
        raise UserError("no window: give --window FIRST LAST or --recipe (whose result.window is used)")
    step_times = window_step_times(table, window)
    seconds = sum(step_times)
    tokens = figures.window_tokens(window[0], window[1], inputs.global_batch, inputs.row_tokens) if inputs else None
    elapsed = (table.last_timestamp - table.first_timestamp).total_seconds() \
        if table.first_timestamp and table.last_timestamp else None
    known = _figure_inputs(inputs, tokens, step_times, elapsed)
    # Typed by Measured's fields: the step-time CV is never None (a window holds at least two steps).
    stored = cast(dict[str, Any], {f.name: f.published(known) for f in figures.STORED})
    measured = Measured(
        **stored, window=window, window_tokens=tokens,
        steps_per_run=table.steps[-1].step + 1, measured=table.last_timestamp.date() if table.last_timestamp else None,
        log_format=table.log_format, window_seconds=seconds,
        ended_early=_ended_early(table, inputs.steps_per_run if inputs else None))
    return measured if inputs is None else RecipeMeasured(**vars(measured))
