"""One short run of a candidate through the engine, read back with openrecipes.measure."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from openrecipes.catalog.command import parse_run
from openrecipes.catalog.hardware import ReferenceTables, load_reference_tables
from openrecipes.catalog.model import Recipe
from openrecipes.catalog.paths import relative_path
from openrecipes.engines.registry import engine_named
from openrecipes.errors import UserError
from openrecipes.figures import mean_half_width
from openrecipes.measure.result import RecipeMeasured
from openrecipes.measure.stack import StackLine, read_stack_line
from openrecipes.tune.candidates import CONFIDENCE_SIGMAS, OOM_MARKERS, WINDOW_FIRST_STEP, Candidate, Runner

Clock = Callable[[], float]  # seconds, monotonic


@dataclass(frozen=True)
class Measurement:
    log: Path
    minutes: float  # device wall time: from starting the run to its exit, as the clock read it
    peak_memory_gib: float | None = None
    result: RecipeMeasured | None = None  # None when the run failed or ran out of memory
    oom: bool = False
    error: str | None = None
    stack: StackLine | None = None  # the versions rank 0 printed

    @property
    def ok(self) -> bool:
        return self.result is not None

    @property
    def figures(self) -> RecipeMeasured:
        """The figures of a run that measured (ok)."""
        if self.result is None:
            raise ValueError(f"{self.log}: the run did not measure ({self.error or 'out of memory'})")
        return self.result

    @property
    def tokens_per_s_per_gpu(self) -> float | None:
        return self.result.tokens_per_s_per_gpu if self.result else None

    @property
    def step_time_cv_percent(self) -> float | None:
        return self.result.step_time_cv_percent if self.result else None

    @property
    def window(self) -> tuple[int, int] | None:
        return self.result.window if self.result else None

    @property
    def pessimistic(self) -> float:
        first, last = self.figures.window
        half_width = mean_half_width(self.figures.step_time_cv_percent, last - first + 1, CONFIDENCE_SIGMAS)
        return self.figures.tokens_per_s_per_gpu * (1 - half_width)


def measure_candidate(recipe: Recipe, steps: int, out_dir: Path, runner: Runner | None = None,
                      tables: ReferenceTables | None = None, clock: Clock = time.monotonic,
                      env: dict[str, str] | None = None, window_first: int = WINDOW_FIRST_STEP) -> Measurement:
    """Run `recipe` for `steps` steps through the engines' execution path and measure its log with
    openrecipes.measure over the steps after warm-up. An out-of-memory exit is a Measurement with oom set.
    Its minutes are the run's wall time from start to exit (torchrun, model build and compilation included). `env`
    (a lane's GPUs and inductor cache) joins the launch's environment; it changes nothing the run computes."""
    from openrecipes.launch.execute import execute
    from openrecipes.measure.formats import read_log_lines
    from openrecipes.measure.result import measure, read_run, run_inputs

    tables = tables or load_reference_tables()
    runner_of_engine = engine_named(recipe.engine).runner
    launch = runner_of_engine.launch(recipe, tables.models[recipe.model], parse_run(recipe.run), steps)
    if env:
        launch = launch.with_env(env)
    tokens_per_step = recipe.workload.global_batch * recipe.workload.row_tokens
    log = out_dir / "train.log"
    started = clock()
    try:
        log = (runner or execute)(launch, out_dir, tokens_per_step=tokens_per_step)
    except UserError as error:
        lines = read_log_lines(log) if log.exists() else []
        oom = any(marker in line for line in lines for marker in OOM_MARKERS)
        return Measurement(log, (clock() - started) / 60, oom=oom, error=str(error))
    minutes = (clock() - started) / 60
    # A candidate's recipe is the base's with another layout: its active parameters are the model card's.
    inputs = run_inputs(recipe, tables, steps_per_run=steps, window=(window_first, steps - 1))
    try:
        table = read_run([log])
        result = measure(table, inputs, None)
    except UserError as error:
        return Measurement(log, minutes, error=str(error))
    window = result.window
    memory = [s.memory_gib for s in table.steps if window[0] <= s.step <= window[1] and s.memory_gib is not None]
    return Measurement(log, minutes, max(memory, default=None), result, stack=read_stack_line(read_log_lines(log)))


def record(candidate: Candidate, measurement: Measurement | None, root: Path, **extra) -> dict:
    """One arm as plain data (tune.json, a sweep's records): its layout, predicted memory, `extra`, and what the
    run measured."""
    lay = candidate.layout
    row = {"slug": candidate.slug, "label": candidate.label, "tp": lay.tp, "pp": lay.pp, "cp": lay.cp, "dp": lay.dp,
           "recompute": lay.recompute, "rows_per_microbatch": lay.rows_per_microbatch, "compile": lay.levers.compile,
           "reshard_after_forward": lay.levers.reshard_after_forward,
           "predicted_memory_gib": round(candidate.memory_gib, 2),
           **extra}
    if measurement is not None:
        m = measurement
        row.update(log=relative_path(m.log, root), minutes=round(m.minutes, 3), oom=m.oom, error=m.error,
                   tokens_per_s_per_gpu=m.tokens_per_s_per_gpu, step_time_cv_percent=m.step_time_cv_percent,
                   window=list(m.window) if m.window else None, peak_memory_gib=m.peak_memory_gib)
    return row
