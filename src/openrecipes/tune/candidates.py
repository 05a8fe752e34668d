"""Candidates, the named data the search runs on, and the efficiency model refitted as runs come in."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from openrecipes import figures
from openrecipes.catalog.hardware import ReferenceTables
from openrecipes.plan.layouts import Layout
from openrecipes.plan.levers import BF16_SEARCH
from openrecipes.plan.predict import Context, predict, predict_layout
from openrecipes.plan.words import describe, lever_names, lever_slug

# Relative error of a held-out tokens/s prediction: benchmarks/RESULTS.md (the planner against our H200 runs): 21 of
# the 23 held-out layouts came within -8.0 % ... +4.8 %; 9 % bounds both directions. (The two misses, eager selective
# AC at one row a microbatch, +22 %, and context parallelism, +10 %, are outside it; see docs/planning.md.)
HELD_OUT_ERROR_BOUND = 0.09
# Steps of one short measuring run, and the first step scored: step 0 holds compilation and the first allocation,
# step 1 the allocator's growth to its peak (runs/qwen3-8b-h200x2-*/train.log: step 1 is the slow one).
MEASURE_STEPS = 10
WINDOW_FIRST_STEP = 2
# Minutes of a run that are not its steps: torchrun start, model build, first-step compilation. 41 s from launch to
# the first step line in runs/qwen3-8b-h200x2-openrecipes-fsdp2-compile-noac-mb1/train.log (compiled; 32 s eager),
# rounded up.
WARMUP_ALLOWANCE_MINUTES = 1.0
# Standard errors between a measured mean and its optimistic / pessimistic bound.
CONFIDENCE_SIGMAS = 2.0
# The efficiency refit's compile gain before a tune has measured both a compiled and an eager arm: none beyond the
# planner's own (its candidates' compute already runs at calibration.yaml's fitted compile_speedup).
COMPILE_GAIN_PRIOR = 0.0
# torchtitan recomputes selectively per op in its stock qwen3 configuration.
SELECTIVE_AC_METHOD = "op"
# What a log says when a rank ran out of GPU memory.
OOM_MARKERS = ("CUDA out of memory", "torch.OutOfMemoryError", "OutOfMemoryError")
# Layouts that do not run on the engine as pinned, by torchtitan model: Qwen3 with tensor parallelism fails at the
# first step on torchtitan 0.2.2 / torch 2.11, compiled or eager (its GQA attention mixes a plain tensor into DTensor
# math; runs/sweep-qwen3-8b-h200x2, docs/planning.md). Measuring them only spends device time on a crash.
DOES_NOT_RUN = {"qwen3": (lambda layout: layout.tp > 1, "tensor parallelism fails on torchtitan 0.2.2 (Qwen3 GQA)")}
Runner = Callable[..., Path]  # (launch, run_dir, *, tokens_per_step) -> train.log; raises UserError on failure


# ---- candidates -------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Candidate:
    layout: Layout
    memory_gib: float
    capacity_gib: float
    unit_compute_s: float  # the step's compute at efficiency 1 (it scales as 1/efficiency)
    other_s: float  # the step's exposed communication and the rest, independent of the efficiency
    tokens_per_step: int
    lever_speedup: float = 1.0  # the layout's levers' measured time factor (openrecipes.plan.levers)

    @property
    def slug(self) -> str:
        lay, levers = self.layout, self.layout.levers
        return (f"tp{lay.tp}-pp{lay.pp}-cp{lay.cp}-dp{lay.dp}-{lay.recompute}-mb{lay.rows_per_microbatch}-"
                f"{'compile' if levers.compile else 'eager'}{'' if levers.reshard_after_forward else '-noreshard'}"
                + lever_slug(levers))

    @property
    def label(self) -> str:
        # The run folder is named by `slug`; the label is only read (tune's tables and tune.json), so it is the one
        # long description every room writes a planned layout with.
        return describe(self.layout)

    def step_s(self, efficiency: float) -> float:
        return (self.unit_compute_s / efficiency + self.other_s) / self.lever_speedup

    def tokens_per_s_per_gpu(self, efficiency: float) -> float:
        return figures.tokens_per_s_per_gpu(self.tokens_per_step, self.step_s(efficiency), self.layout.gpus)


def _unit_context(ctx: Context) -> Context:
    return replace(ctx, calibration=replace(ctx.calibration, compute_efficiency=dict.fromkeys(
        ctx.calibration.compute_efficiency, 1.0)))


def as_candidate(ctx: Context, layout: Layout) -> Candidate:
    prediction = predict_layout(ctx, layout)
    unit = predict_layout(_unit_context(ctx), layout).step
    compute = unit.pipeline_slots * unit.microbatch_compute_s
    request = ctx.request
    return Candidate(layout, prediction.memory.total_gib, prediction.capacity_gib, compute,
                     unit.without_levers_s - compute, request.global_batch * request.row_tokens, unit.lever_speedup)


def renderable(layout: Layout) -> bool:
    """What a recipe can say and torchtitan run as the planner models it: no pipeline stages (the renderer keeps
    the global batch by gradient accumulation, one microbatch a pass, so a pipeline would drain after every
    microbatch instead of running the schedule the planner times), no offload. (Whole microbatches, torchtitan's
    global batch rule, hold for every layout the planner enumerates.)"""
    return layout.pp == 1 and layout.vpp == 1 and layout.levers.offload_fraction == 0


def runs_on_engine(layout: Layout, torchtitan_model: str | None) -> bool:
    known = DOES_NOT_RUN.get(torchtitan_model or "")
    return known is None or not known[0](layout)


def candidates(ctx: Context, tables: ReferenceTables, kernels: bool = False, attention: bool = False,
               float8: str | None = None) -> list[Candidate]:
    """Every renderable torchtitan layout whose predicted peak fits and that the engine runs, from the planner's own
    enumeration (openrecipes.plan.levers.lever_groups: compile and resharding on and off; every kernel and attention
    choice when searched; every layout in FP8 with `float8` scaling when given, an FP8 search having no BF16
    candidate), ranked by predicted tokens/s (then memory)."""
    search = replace(BF16_SEARCH, kernels="all" if kernels else "none", attention="all" if attention else "none")
    request = replace(ctx.request, search=search, float8=float8)
    model = tables.models[request.model].architecture.get("torchtitan_model")
    layouts = {p.layout for p in predict(request, tables) if p.peak_fits
               and renderable(p.layout) and runs_on_engine(p.layout, model)}
    found = [as_candidate(ctx, lay) for lay in layouts]
    return sorted(found, key=lambda c: (-round(c.tokens_per_s_per_gpu(1.0), 6), c.memory_gib, c.slug))


# ---- efficiency model and its refit --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Efficiency:
    """log efficiency = a + b * compiled; a from calibration.yaml and b from COMPILE_GAIN_PRIOR until measured points
    replace them."""
    log_a: float
    b: float = math.log1p(COMPILE_GAIN_PRIOR)
    points: int = 0

    def of(self, layout: Layout) -> float:
        return math.exp(self.log_a + (self.b if layout.levers.compile else 0.0))


def point_efficiency(candidate: Candidate, measured_step_s: float) -> float | None:
    """The efficiency that makes the prediction equal the measured step (None when communication alone exceeds it)."""
    compute_s = measured_step_s - candidate.other_s
    return candidate.unit_compute_s / compute_s if compute_s > 0 else None


def refit(prior: Efficiency, points: list[tuple[Candidate, float]]) -> Efficiency:
    """Least squares in log space over every measured point: log eff_i = a + b * compiled_i. With points of one
    kind only, b keeps the prior's value and a is their mean (the least-squares constant). Points that pull a lever
    are left out: their time effect is the lever's own factor, not the layout's efficiency."""
    solved = [(c.layout.levers.compile, math.log(e)) for c, step in points
              if not lever_names(c.layout.levers) and (e := point_efficiency(c, step))]
    if not solved:
        return prior
    eager = [y for compiled, y in solved if not compiled]
    compiled = [y for is_compiled, y in solved if is_compiled]
    if eager and compiled:
        a = sum(eager) / len(eager)
        return Efficiency(a, sum(compiled) / len(compiled) - a, len(solved))
    mean = sum(y for _, y in solved) / len(solved)
    return Efficiency(mean - (prior.b if compiled else 0.0), prior.b, len(solved))


def optimistic_prediction(candidate: Candidate, efficiency: Efficiency) -> float:
    return candidate.tokens_per_s_per_gpu(efficiency.of(candidate.layout)) * (1 + HELD_OUT_ERROR_BOUND)


def pessimistic_prediction(candidate: Candidate, efficiency: Efficiency) -> float:
    return candidate.tokens_per_s_per_gpu(efficiency.of(candidate.layout)) * (1 - HELD_OUT_ERROR_BOUND)


def rank(pool: list[Candidate], efficiency: Efficiency) -> list[Candidate]:
    return sorted(pool, key=lambda c: (-c.tokens_per_s_per_gpu(efficiency.of(c.layout)), c.memory_gib, c.slug))


def contenders(ranked: list[Candidate], efficiency: Efficiency) -> list[Candidate]:
    """The candidates whose optimistic prediction can beat the best one's pessimistic prediction."""
    if not ranked:
        return []
    bar = max(pessimistic_prediction(c, efficiency) for c in ranked)
    return [c for c in ranked if optimistic_prediction(c, efficiency) >= bar]


def estimated_minutes(candidate: Candidate, efficiency: Efficiency, steps: int = MEASURE_STEPS) -> float:
    return WARMUP_ALLOWANCE_MINUTES + steps * candidate.step_s(efficiency.of(candidate.layout)) / 60


def within_budget(ranked: list[Candidate], efficiency: Efficiency, minutes_left: float,
                  steps: int = MEASURE_STEPS) -> list[Candidate]:
    """The ranked candidates that fit the budget one after the other, in rank order."""
    chosen, total = [], 0.0
    for candidate in ranked:
        minutes = estimated_minutes(candidate, efficiency, steps)
        if total + minutes <= minutes_left:
            chosen.append(candidate)
            total += minutes
    return chosen
