"""The tuning loop: measure, refit, re-rank, drop what cannot win, stop at the budget."""

from __future__ import annotations

import datetime
import json
import math
import os
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from openrecipes import figures
from openrecipes.atomic import write_atomic
from openrecipes.catalog.hardware import ModelCard, ReferenceTables, load_reference_tables
from openrecipes.catalog.model import Recipe
from openrecipes.catalog.names import gpu_name, model_name
from openrecipes.catalog.paths import default_catalog_root, relative_path
from openrecipes.catalog.store import load_catalog
from openrecipes.catalog.yamlio import read_yaml
from openrecipes.engines.registry import engine_named
from openrecipes.errors import UserError
from openrecipes.plan.calibrate import measured_point
from openrecipes.plan.predict import Context, PlanRequest, context
from openrecipes.plan.variants import efficiency as variant_efficiency
from openrecipes.tune.arms import Arm, arm_of, reference_arm
from openrecipes.tune.candidates import (
    MEASURE_STEPS,
    WINDOW_FIRST_STEP,
    Candidate,
    Efficiency,
    Runner,
    as_candidate,
    candidates,
    contenders,
    estimated_minutes,
    optimistic_prediction,
    rank,
    refit,
)
from openrecipes.tune.measuring import Clock, Measurement, measure_candidate, record
from openrecipes.verify.verdicts import ConfigVerdict, ConvergenceVerdict


@dataclass
class Outcome:
    candidate: Candidate
    arm: Arm | None
    measurement: Measurement | None = None
    dropped: str | None = None  # why it was not measured or cannot win
    predicted_at_measurement: float | None = None

    @property
    def arm_to_run(self) -> Arm:
        """The arm of an outcome chosen to run (a candidate dropped before running has none)."""
        if self.arm is None:
            raise ValueError(f"{self.candidate.label}: dropped before it ran, it has no arm")
        return self.arm

    @property
    def measured_run(self) -> Measurement:
        if self.measurement is None:
            raise ValueError(f"{self.candidate.label}: not measured")
        return self.measurement


@dataclass
class TuneResult:
    base_path: Path
    efficiency: Efficiency
    outcomes: list[Outcome]
    reference: Outcome
    rankings: list[list[str]]  # the contenders' slugs in rank order, before each measurement
    budget_minutes: float
    spent_minutes: float  # the arms' minutes added up (each arm's wall time); lanes run several at once
    run_root: Path
    wall_minutes: float = 0.0  # from the first arm's start to the last one's end
    lanes: int = 1
    winner: Outcome | None = None
    recipe_path: Path | None = None
    config: ConfigVerdict | None = None  # the winner against the reference arm, set when its recipe is written
    convergence: ConvergenceVerdict | None = None
    stop_reason: str = ""

    @property
    def measured(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.measurement is not None]


@dataclass
class Setup:
    """Everything `tune` and `--dry-run` share."""
    root: Path
    tables: ReferenceTables
    base_path: Path
    base: Recipe
    card: ModelCard
    ctx: Context
    prior: Efficiency
    ranked: list[Candidate]
    reference: Candidate
    run_root: Path
    float8: str | None = None  # an FP8 search: its candidates train in FP8 and never compete with the BF16 reference


def contestants(s: Setup, reference: Outcome, outcomes: list[Outcome]) -> list[Outcome]:
    """The arms that may lead or win: an FP8 search ranks its FP8 arms only (the BF16 reference arm is measured
    for the checks, on its own board)."""
    return outcomes if s.float8 else [reference, *outcomes]


def find_base(model: str, gpu_type: str, gpus: int, root: Path) -> Path:
    """The catalog's stock recipe of the model on this many GPUs of this type (no reference arm) whose engine runs
    here."""
    found = [(recipe.runs is not None and recipe.runs.reference is not None, str(entry.path), root / entry.path)
             for entry, recipe in ((e, e.entry) for e in load_catalog(root).recipes)
             if (recipe.model, recipe.gpu.type, recipe.gpu.count) == (model, gpu_type, gpus)
             and engine_named(recipe.engine).runner.runs_here]
    if not found:
        raise UserError(f"no torchtitan recipe of {model} on {gpus} x {gpu_type} in {root / 'recipes'} to start from; "
                        "give --base RECIPE (a torchtitan recipe of this model and GPU count)")
    return sorted(found)[0][2]


def base_configuration(path: Path) -> Recipe:
    """The base recipe as a configuration: tune runs its command and layout and measures them itself (the reference
    arm), so only the schema is checked here, not the catalog's checks of a measured result. A new model's stock
    configuration can be tuned before its own raw log exists."""
    from pydantic import ValidationError

    from openrecipes.catalog.validate import parse_entry

    doc = read_yaml(Path(path))
    try:
        entry = parse_entry(doc)
    except ValidationError as error:
        first = error.errors(include_url=False)[0]
        where = ".".join(str(part) for part in first["loc"])
        raise UserError(f"{path}: {where}: {first['msg']}; run `openrecipes validate {path}`") from None
    if not isinstance(entry, Recipe):
        raise UserError(f"{path}: a published summary entry, not a runnable recipe")
    return entry


def setup(model: str, gpu_type: str, gpus: int, base_path: Path | None = None, root: Path | None = None,
          when: datetime.datetime | None = None, kernels: bool = False, attention: bool = False,
          float8: str | None = None) -> Setup:
    root = Path(root or default_catalog_root()).resolve()
    tables = load_reference_tables(root)
    model, gpu_type = model_name(model, tables), gpu_name(gpu_type, tables)
    base_path = Path(base_path) if base_path else find_base(model, gpu_type, gpus, root)
    base = base_configuration(base_path)
    engine = engine_named(base.engine)
    if not engine.runner.runs_here:
        raise UserError(f"{base_path}: a {engine.name} recipe, whose runs start elsewhere; tune measures runs it can "
                        "start here (torchtitan recipes)")
    if (base.model, base.gpu.type, base.gpu.count) != (model, gpu_type, gpus):
        raise UserError(f"{base_path}: a recipe of {base.model} on {base.gpu.count} x {base.gpu.type}, not {model} on "
                        f"{gpus} x {gpu_type}; give a base recipe of the same model, GPU type and count")
    request = PlanRequest(model, gpu_type, gpus, base.workload.row_tokens, base.workload.global_batch,
                          engine.name, variant=base.gpu.variant)
    ctx = context(request, tables)
    prior = Efficiency(math.log(variant_efficiency(ctx.calibration, engine.name, ctx.links.variant,
                                                   ctx.links.catalog_root)))
    reference = as_candidate(ctx, measured_point('base', base).layout)
    if base.workload.precision != "bf16" or base.layout.float8 is not None:
        raise UserError(f"{base_path}: precision {base.workload.precision}; tune starts from a BF16 recipe (an FP8 "
                        "search is `tune --float8 SCALING` from the BF16 one)")
    ranked = [c for c in candidates(ctx, tables, kernels, attention, float8) if c.layout != reference.layout]
    stamp = (when or datetime.datetime.now()).strftime("%Y%m%d-%H%M%S")
    board = f"-fp8{float8}" if float8 else ""
    run_root = root / "runs" / f"tune-{model.lower()}-{gpu_type.lower()}x{gpus}{board}-{stamp}"
    return Setup(root, tables, base_path, base, tables.models[model], ctx, prior, ranked,
                 reference, run_root, float8)


def _leader(outcomes: list[Outcome]) -> Outcome | None:
    measured = [o for o in outcomes if o.measurement is not None and o.measurement.ok]
    return max(measured, key=lambda o: o.measured_run.figures.tokens_per_s_per_gpu, default=None)


def _memory_miss(candidate: Candidate) -> str:
    return (f"out of memory: predicted {candidate.memory_gib:.1f} GiB of {candidate.capacity_gib:.1f}, so the planner "
            f"said it fits; the layout is unfit (memory under-predicted by at least "
            f"{candidate.capacity_gib - candidate.memory_gib:.1f} GiB)")


def lane_environments(lanes: int, gpus_per_lane: int) -> list[dict[str, str]]:
    """One environment per lane: its own GPUs (consecutive groups of this process's visible GPUs, or of 0, 1, ...)
    and its own inductor cache, so arms that run at once on one host neither share a GPU nor race on a cache.
    One lane changes nothing."""
    if lanes == 1:
        return [{}]
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    devices = visible.split(",") if visible else [str(i) for i in range(lanes * gpus_per_lane)]
    if len(devices) < lanes * gpus_per_lane:
        raise UserError(f"--lanes {lanes} needs {lanes * gpus_per_lane} GPUs ({gpus_per_lane} a lane); "
                        f"CUDA_VISIBLE_DEVICES names {len(devices)}")
    cache = os.environ.get("TORCHINDUCTOR_CACHE_DIR", os.path.join(tempfile.gettempdir(), "torchinductor-tune"))
    return [{"CUDA_VISIBLE_DEVICES": ",".join(devices[i * gpus_per_lane:(i + 1) * gpus_per_lane]),
             "TORCHINDUCTOR_CACHE_DIR": f"{cache}-lane{i}"} for i in range(lanes)]


def tune(s: Setup, budget_minutes: float, runner: Runner | None = None, steps: int = MEASURE_STEPS,
         clock: Clock = time.monotonic, lanes: int = 1, window_first: int = WINDOW_FIRST_STEP,
         wall_minutes: float | None = None) -> TuneResult:
    """Measure the reference arm, then the contenders best-predicted first, refitting and pruning after each batch.
    With `lanes` > 1 a batch is that many arms run at once, each on its own GPUs (the reference arm with the first
    contenders); the budget counts every arm's minutes. With `wall_minutes`, no arm starts that is estimated to end
    later than that many minutes after the search started (a machine lent for a fixed time). run_root/tune.json records
    every arm so far after each batch (a search cut short keeps its record)."""
    if not 0 <= window_first < steps - 1:
        raise UserError(f"--window-from {window_first} leaves no window in {steps} steps; give a smaller one")
    environments = lane_environments(lanes, s.base.gpu.count)

    def measure(arm: Arm, env: dict[str, str]) -> Measurement:  # one lane's arm, with that lane's environment
        return measure_candidate(arm.recipe, steps, s.run_root / arm.name, runner, s.tables, clock, env=env,
                                 window_first=window_first)

    efficiency = s.prior
    reference = Outcome(s.reference, reference_arm(s.base, s.card, s.reference, steps))
    pool = contenders(rank(s.ranked, efficiency), efficiency)
    outcomes = [Outcome(c, None, dropped="its optimistic prediction cannot beat the best one's pessimistic one")
                for c in s.ranked if c not in pool]
    first = estimated_minutes(s.reference, efficiency, steps) + (
        estimated_minutes(pool[0], efficiency, steps) if pool else 0)
    if first > budget_minutes:
        raise UserError(f"--budget-minutes {budget_minutes:g} is below the {first:.1f} minutes the reference arm and "
                        "the best candidate need; give more")
    result = TuneResult(s.base_path, efficiency, outcomes, reference, [], budget_minutes, 0.0, s.run_root,
                        lanes=lanes)
    started = clock()
    batch: list[Outcome] = [reference]
    while True:
        pool = rank(pool, efficiency)
        leader = _leader(contestants(s, reference, result.outcomes))
        if leader is not None:
            for candidate in [c for c in pool
                              if optimistic_prediction(c, efficiency) < leader.measured_run.pessimistic]:
                pool.remove(candidate)
                best_case = optimistic_prediction(candidate, efficiency)
                outcomes.append(Outcome(candidate, None, dropped=f"cannot win: optimistic {best_case:,.0f} < "
                                        f"leader's pessimistic {leader.measured_run.pessimistic:,.0f} tokens/s/GPU"))
        left = budget_minutes - result.spent_minutes - sum(
            estimated_minutes(o.candidate, efficiency, steps) for o in batch)
        if not pool and not batch:
            result.stop_reason = "no candidate left that can win"
            break
        wall_left = math.inf if wall_minutes is None else wall_minutes - (clock() - started) / 60
        for candidate in list(pool):  # fill the batch's free lanes, best-predicted first, within the budget
            if len(batch) == lanes:
                break
            minutes = estimated_minutes(candidate, efficiency, steps)
            if minutes <= left and minutes <= wall_left:
                pool.remove(candidate)
                left -= minutes
                batch.append(Outcome(candidate, arm_of(candidate.slug, s.base, s.card, candidate, steps),
                                     predicted_at_measurement=candidate.tokens_per_s_per_gpu(
                                         efficiency.of(candidate.layout))))
        if not batch:
            result.stop_reason = (f"budget: {left:.1f} minutes left, the next candidate needs more" if wall_left >= left
                                  else f"wall clock: {wall_left:.1f} minutes left, the next candidate needs more")
            outcomes.extend(Outcome(c, None, dropped="budget") for c in pool)
            break
        if batch != [reference]:  # the contenders in rank order, before a batch that measures some of them
            result.rankings.append([o.candidate.slug for o in batch if o is not reference] + [c.slug for c in pool])
        with ThreadPoolExecutor(max_workers=len(batch)) as threads:
            measured = list(threads.map(measure, [o.arm_to_run for o in batch], environments))
        for outcome, measurement in zip(batch, measured, strict=True):
            outcome.measurement = measurement
            result.spent_minutes += measurement.minutes
            if outcome is reference:
                if not measurement.ok:
                    raise UserError(f"the reference arm (the base recipe {s.base_path}) did not run: "
                                    f"{measurement.error}" + (f"; see {measurement.log}" if measurement.log.exists()
                                                              else ""))
                continue
            outcomes.append(outcome)
            if measurement.oom:
                outcome.dropped = _memory_miss(outcome.candidate)
            elif not measurement.ok:
                outcome.dropped = f"the run failed: {measurement.error}"
        result.wall_minutes = (clock() - started) / 60
        batch = []
        points = [(o.candidate, _step_s(o)) for o in [reference, *result.outcomes]
                  if o.measurement is not None and o.measurement.ok]
        efficiency = result.efficiency = refit(s.prior, points)
        write_record(s, result)
    result.winner = _leader(contestants(s, reference, result.outcomes))
    write_record(s, result)
    return result


def write_record(s: Setup, result: TuneResult) -> Path:
    """run_root/tune.json: the search as data: every arm measured (layout, prediction, figures, minutes) and every
    candidate left out with the reason."""
    def row(o: Outcome) -> dict:
        return record(o.candidate, o.measurement, s.root, dropped=o.dropped,
                      predicted_tokens_per_s_per_gpu=o.predicted_at_measurement)

    leader = _leader(contestants(s, result.reference, result.outcomes))
    data = {"model": s.base.model, "gpu": s.base.gpu.type, "gpus": s.base.gpu.count, "float8": s.float8,
            "base": relative_path(s.base_path, s.root),
            "candidates": len(s.ranked), "budget_minutes": result.budget_minutes,
            "spent_minutes": round(result.spent_minutes, 3), "wall_minutes": round(result.wall_minutes, 3),
            "lanes": result.lanes, "stop_reason": result.stop_reason,
            "efficiency": {"log_a": result.efficiency.log_a, "b_compile": result.efficiency.b,
                           "points": result.efficiency.points},
            "winner": leader.candidate.slug if leader else None,
            "reference": row(result.reference), "outcomes": [row(o) for o in result.outcomes]}
    path = s.run_root / "tune.json"
    write_atomic(path, json.dumps(data, indent=1) + "\n")
    return path


def _step_s(outcome: Outcome) -> float:
    c = outcome.candidate
    return figures.step_seconds(c.tokens_per_step, c.layout.gpus, outcome.measured_run.figures.tokens_per_s_per_gpu)
