"""`openrecipes tune`: measure the planner's best torchtitan layouts with short runs and write the winner as a recipe.

1. Candidates: the planner's fitting torchtitan layouts (with torch.compile and reshard-after-forward variants),
   kept while their optimistic prediction can beat the best one's pessimistic prediction, capped by the budget.
2. Each is measured with a short run through the engines' execution path (torchrun) and openrecipes.measure.
3. A candidate is dropped once its optimistic throughput cannot reach the leader's pessimistic measured one; a run
   that ends in "CUDA out of memory" marks its layout unfit and records the planner's memory miss.
4. After each measurement the (model, GPU) efficiency is refitted over every point so far and the rest re-ranked.
5. The winner becomes a recipe (status measured) whose reference arm is the base recipe's stock configuration, run
   for the same steps; `check config` and `check convergence` go into its `correctness`.
6. Nothing is started past the budget; `--dry-run` prints the plan and the exact commands and runs nothing.
"""

from __future__ import annotations

import copy
import datetime
import math
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

import yaml

from openrecipes import figures
from openrecipes.catalog.hardware import ReferenceTables, load_reference_tables
from openrecipes.catalog.model import Recipe
from openrecipes.catalog.paths import default_catalog_root
from openrecipes.catalog.store import load_catalog
from openrecipes.catalog.yamlio import read_yaml
from openrecipes.engines.torchtitan.render import compose, is_torchtitan, render, run_launch
from openrecipes.errors import UserError
from openrecipes.plan.calibrate import NO_RESHARD_FLAG, measured_point
from openrecipes.plan.layouts import Layout
from openrecipes.plan.predict import Context, PlanRequest, context, predict, predict_layout

# ---- named data -------------------------------------------------------------------------------------------------

# Relative error of a held-out tokens/s prediction: benchmarks/RESULTS.md ("torchtitan on H200"): the five compiled
# held-out H200 layouts came within -2.5 % ... +6.5 % of the planner; the largest, 6.5 %, bounds both directions.
# (The one eager Qwen3-1.7B miss, +50.7 %, is outside it: small eager models are not modelled; see README.)
HELD_OUT_ERROR_BOUND = 0.065
# Steps of one short measuring run, and the first step scored: step 0 holds compilation and the first allocation,
# step 1 the allocator's growth to its peak (runs/qwen3-8b-h200x2-*/train.log: step 1 is the slow one).
MEASURE_STEPS = 10
WINDOW_FIRST_STEP = 2
# Minutes of a run that are not its steps: torchrun start, model build, first-step compilation. 41 s from launch to
# the first step line in runs/qwen3-8b-h200x2-openrecipes-fsdp2-compile-noac-mb1/train.log (compiled; 32 s eager),
# rounded up.
WARMUP_ALLOWANCE_MINUTES = 1.0
# Seconds before a log's first timestamped line (torchrun and imports): 18 s in runs/qwen3-8b-h200x2-torchtitan-stock.
PROCESS_START_MINUTES = 0.5
# Standard errors between a measured mean and its optimistic / pessimistic bound.
CONFIDENCE_SIGMAS = 2.0
# torchtitan recomputes selectively per op in its stock qwen3 configuration.
SELECTIVE_AC_METHOD = "op"
# What a log says when a rank ran out of GPU memory.
OOM_MARKERS = ("CUDA out of memory", "torch.OutOfMemoryError", "OutOfMemoryError")
# The variants the planner does not enumerate (it plans eager with resharding): (compile, reshard_after_forward).
VARIANTS = ((False, True), (True, True), (True, False), (False, False))
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

    @property
    def slug(self) -> str:
        lay = self.layout
        return (f"tp{lay.tp}-pp{lay.pp}-cp{lay.cp}-dp{lay.dp}-{lay.recompute}-mb{lay.rows_per_microbatch}-"
                f"{'compile' if lay.compile else 'eager'}{'' if lay.reshard_after_forward else '-noreshard'}")

    @property
    def label(self) -> str:
        lay = self.layout
        return (f"{lay.label} {lay.recompute} MB{lay.rows_per_microbatch} {'compile' if lay.compile else 'eager'}"
                f"{'' if lay.reshard_after_forward else ' no-reshard'}")

    def step_s(self, efficiency: float) -> float:
        return self.unit_compute_s / efficiency + self.other_s

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
    return Candidate(layout, prediction.memory.total_gib, prediction.capacity_gib, compute, unit.total_s - compute,
                     request.global_batch * request.row_tokens)


def renderable(layout: Layout, global_batch: int) -> bool:
    """What a recipe can say and torchtitan run: no interleaved stages (the renderer has no VPP flag), an even
    pipeline split (no layer_split flag), whole microbatches (torchtitan's global batch rule), no offload."""
    return (layout.vpp == 1 and len(set(layout.stage_layers)) == 1 and layout.offload_fraction == 0
            and (global_batch // layout.dp) % layout.rows_per_microbatch == 0)


def variants(layout: Layout) -> list[Layout]:
    """compile on/off and reshard-after-forward on/off (the latter only where FSDP shards: DP > 1)."""
    return [replace(layout, compile=c, reshard_after_forward=r) for c, r in VARIANTS
            if r or layout.dp > 1]


def candidates(ctx: Context, tables: ReferenceTables) -> list[Candidate]:
    """Every fitting, renderable torchtitan layout and its variants, ranked by predicted tokens/s (then memory)."""
    request = ctx.request
    layouts = {v for p in predict(request, tables) if p.fits and renderable(p.layout, request.global_batch)
               for v in variants(p.layout)}
    found = [c for c in (as_candidate(ctx, lay) for lay in layouts) if c.memory_gib <= c.capacity_gib]
    return sorted(found, key=lambda c: (-round(c.tokens_per_s_per_gpu(1.0), 6), c.memory_gib, c.slug))


# ---- efficiency model and its refit --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Efficiency:
    """log efficiency = a + b * compiled; a from calibration.yaml and b = 0 (the planner has no compile term) until
    measured points replace them."""
    log_a: float
    b: float = 0.0
    points: int = 0

    def of(self, layout: Layout) -> float:
        return math.exp(self.log_a + (self.b if layout.compile else 0.0))


def point_efficiency(candidate: Candidate, measured_step_s: float) -> float | None:
    """The efficiency that makes the prediction equal the measured step (None when communication alone exceeds it)."""
    compute_s = measured_step_s - candidate.other_s
    return candidate.unit_compute_s / compute_s if compute_s > 0 else None


def refit(prior: Efficiency, points: list[tuple[Candidate, float]]) -> Efficiency:
    """Least squares in log space over every measured point: log eff_i = a + b * compiled_i. With points of one
    kind only, b keeps the prior's value and a is their mean (the least-squares constant)."""
    solved = [(c.layout.compile, math.log(e)) for c, step in points if (e := point_efficiency(c, step))]
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


def within_budget(ranked: list[Candidate], efficiency: Efficiency, minutes_left: float) -> list[Candidate]:
    """The ranked candidates that fit the budget one after the other, in rank order."""
    chosen, total = [], 0.0
    for candidate in ranked:
        minutes = estimated_minutes(candidate, efficiency)
        if total + minutes <= minutes_left:
            chosen.append(candidate)
            total += minutes
    return chosen


# ---- recipes of candidates ----------------------------------------------------------------------------------------

def candidate_data(base: dict, candidate: Candidate, steps: int) -> dict:
    """The base recipe's data with the candidate's layout fields and `steps`; `run` is re-rendered separately."""
    lay = candidate.layout
    data = copy.deepcopy(base)
    recompute = None if lay.recompute == "none" else {
        "granularity": lay.recompute, "method": SELECTIVE_AC_METHOD if lay.recompute == "selective" else None,
        "num_layers": None}
    data["layout"].update(
        label=candidate.label, summary=f"{lay.label}; {lay.rows_per_microbatch} row(s) of "
        f"{data['workload']['row_tokens']:,} tokens a microbatch; recompute {lay.recompute}; "
        f"{'torch.compile' if lay.compile else 'eager'}; {'reshard' if lay.reshard_after_forward else 'no reshard'} "
        "after forward (chosen by `openrecipes tune`)",
        highlights=f"tuned: {candidate.label}", tp=lay.tp, pp=lay.pp, vpp=1, cp=lay.cp, ep=lay.ep, etp=lay.etp,
        dp=lay.dp, fsdp=lay.dp, sequence_parallel=lay.tp > 1, layer_split=None,
        max_tokens_per_gpu=lay.max_tokens_per_gpu, rows_per_microbatch=lay.rows_per_microbatch, recompute=recompute,
        offload=None, compile=lay.compile)
    data["result"]["steps_per_run"] = steps
    return data


def rendered_run(data: dict, base: Recipe, card, reshard_after_forward: bool) -> str:
    """`run` for a recipe whose fields differ from the base: its fields' flags over the base command's others."""
    launch = compose(Recipe.model_validate(data), card, base)
    flag, value = NO_RESHARD_FLAG.split()
    launch.flags.pop(flag, None)  # the base's choice; the candidate's own follows
    if not reshard_after_forward:
        launch.flags[flag] = [value]
    return launch.script()


@dataclass
class Arm:
    """One runnable arm: its recipe data, the typed recipe and its layout's candidate."""
    name: str
    data: dict
    recipe: Recipe
    candidate: Candidate


def arm_of(name: str, base_data: dict, base: Recipe, card, candidate: Candidate, steps: int) -> Arm:
    data = candidate_data(base_data, candidate, steps)
    data["run"] = rendered_run(data, base, card, candidate.layout.reshard_after_forward)
    return Arm(name, data, Recipe.model_validate(data), candidate)


def reference_arm(base_data: dict, base: Recipe, card, candidate: Candidate, steps: int) -> Arm:
    """The base recipe's own configuration at `steps` steps: only --training.steps changes."""
    data = copy.deepcopy(base_data)
    data["result"]["steps_per_run"] = steps
    data["run"] = render(base, card, steps=steps).script()
    return Arm("reference", data, Recipe.model_validate(data), candidate)


# ---- measuring -----------------------------------------------------------------------------------------------------

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


def _log_minutes(log: Path) -> float:
    from openrecipes.measure.formats import read_log_lines, timestamp_of

    stamps = [t for t in map(timestamp_of, read_log_lines(log)) if t is not None] if log.exists() else []
    seconds = (max(stamps) - min(stamps)).total_seconds() if stamps else 0.0
    return PROCESS_START_MINUTES + seconds / 60


def measure_candidate(recipe: Recipe, steps: int, out_dir: Path, runner: Runner | None = None,
                      tables: ReferenceTables | None = None) -> Measurement:
    """Run `recipe` for `steps` steps through the engines' execution path and measure its log with
    openrecipes.measure over the steps after warm-up. An out-of-memory exit is a Measurement with oom set."""
    from openrecipes.engines.execute import execute
    from openrecipes.measure.formats import read_log_lines
    from openrecipes.measure.result import RunInputs, measure, read_run

    tables = tables or load_reference_tables()
    card = tables.models[recipe.model]
    launch = run_launch(recipe, card, steps)
    tokens_per_step = recipe.workload.global_batch * recipe.workload.row_tokens
    log = out_dir / "train.log"
    try:
        log = (runner or execute)(launch, out_dir, tokens_per_step=tokens_per_step)
    except UserError as error:
        text = "\n".join(read_log_lines(log)) if log.exists() else ""
        oom = any(marker in text for marker in OOM_MARKERS)
        return Measurement(log, _log_minutes(log), oom=oom, error=str(error))
    instance = tables.instances[recipe.gpu.instance]
    inputs = RunInputs(
        gpus=recipe.gpu.count, global_batch=recipe.workload.global_batch, row_tokens=recipe.workload.row_tokens,
        active_params=tables.models[recipe.model].active_params.count,
        peak_flops_per_gpu=tables.gpus[recipe.gpu.type].peak_bf16_flops,
        usd_per_gpu_hour=figures.usd_per_gpu_hour(instance.usd_per_hour, instance.gpus), steps_per_run=steps,
        window=(WINDOW_FIRST_STEP, steps - 1))
    try:
        table = read_run([log])
        result = measure(table, inputs, None)
    except UserError as error:
        return Measurement(log, _log_minutes(log), error=str(error))
    window = tuple(result["window"])
    memory = [s.memory_gib for s in table.steps if window[0] <= s.step <= window[1] and s.memory_gib is not None]
    return Measurement(log, _log_minutes(log), result["tokens_per_s_per_gpu"], result["step_time_cv_percent"],
                       window, max(memory, default=None), result, stack=_stack_line(read_log_lines(log)))


# ---- the tuning loop ---------------------------------------------------------------------------------------------

@dataclass
class Outcome:
    candidate: Candidate
    arm: Arm | None
    measurement: Measurement | None = None
    dropped: str | None = None  # why it was not measured or cannot win
    predicted_at_measurement: float | None = None


@dataclass
class TuneResult:
    base_path: Path
    efficiency: Efficiency
    outcomes: list[Outcome]
    reference: Outcome
    rankings: list[list[str]]  # the contenders' slugs in rank order, before each measurement
    budget_minutes: float
    spent_minutes: float
    run_root: Path
    winner: Outcome | None = None
    recipe_path: Path | None = None
    config: dict | None = None
    convergence: dict | None = None
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
    base_data: dict
    base: Recipe
    card: object
    ctx: Context
    prior: Efficiency
    ranked: list[Candidate]
    reference: Candidate
    run_root: Path


def find_base(model: str, gpu_type: str, gpus: int, root: Path) -> Path:
    """The catalog's stock torchtitan recipe of the model on this many GPUs of this type (no reference arm)."""
    found = []
    for entry in load_catalog(root).recipes:
        recipe = entry.entry
        if (recipe.model == model and recipe.gpu.type == gpu_type and recipe.gpu.count == gpus
                and is_torchtitan(recipe)):
            found.append((recipe.runs is not None and recipe.runs.reference is not None, str(entry.path), root / entry.path))
    if not found:
        raise UserError(f"no torchtitan recipe of {model} on {gpus} x {gpu_type} in {root / 'recipes'} to start from; "
                        "give --base RECIPE (a torchtitan recipe of this model and GPU count)")
    return sorted(found)[0][2]


def setup(model: str, gpu_type: str, gpus: int, base_path: Path | None = None, root: Path | None = None,
          when: datetime.datetime | None = None) -> Setup:
    root = Path(root or default_catalog_root()).resolve()
    tables = load_reference_tables(root)
    if model not in tables.models:
        raise UserError(f"unknown model '{model}'; known: {', '.join(sorted(tables.models))} (models/*.yaml)")
    if gpu_type not in tables.gpus:
        raise UserError(f"unknown GPU type '{gpu_type}'; known: {', '.join(tables.gpus)} (hardware/gpus.yaml)")
    base_path = Path(base_path) if base_path else find_base(model, gpu_type, gpus, root)
    from openrecipes.catalog import load_recipe

    base = load_recipe(base_path)
    if not is_torchtitan(base):
        raise UserError(f"{base_path}: not a torchtitan recipe; tune measures torchtitan runs only")
    if (base.model, base.gpu.type, base.gpu.count) != (model, gpu_type, gpus):
        raise UserError(f"{base_path}: a recipe of {base.model} on {base.gpu.count} x {base.gpu.type}, not {model} on "
                        f"{gpus} x {gpu_type}; give a base recipe of the same model, GPU type and count")
    request = PlanRequest(model, gpu_type, gpus, base.workload.row_tokens, base.workload.global_batch, "torchtitan")
    ctx = context(request, tables)
    prior = Efficiency(math.log(ctx.calibration.efficiency("torchtitan", gpu_type)))
    reference = as_candidate(ctx, measured_point('base', base).layout)
    ranked = [c for c in candidates(ctx, tables) if c.layout != reference.layout]
    stamp = (when or datetime.datetime.now()).strftime("%Y%m%d-%H%M%S")
    run_root = root / "runs" / f"tune-{model.lower()}-{gpu_type.lower()}x{gpus}-{stamp}"
    return Setup(root, tables, base_path, read_yaml(base_path).data, base, tables.models[model], ctx, prior, ranked,
                 reference, run_root)


def _leader(outcomes: list[Outcome]) -> Outcome | None:
    measured = [o for o in outcomes if o.measurement is not None and o.measurement.ok]
    return max(measured, key=lambda o: o.measurement.tokens_per_s_per_gpu, default=None)


def _cannot_win(candidate: Candidate, efficiency: Efficiency, leader: Outcome | None) -> bool:
    return leader is not None and optimistic_prediction(candidate, efficiency) < leader.measurement.pessimistic


def _memory_miss(candidate: Candidate) -> str:
    return (f"out of memory: predicted {candidate.memory_gib:.1f} GiB of {candidate.capacity_gib:.1f}, so the planner "
            f"said it fits; the layout is unfit (memory under-predicted by at least "
            f"{candidate.capacity_gib - candidate.memory_gib:.1f} GiB)")


def tune(s: Setup, budget_minutes: float, runner: Runner | None = None, steps: int = MEASURE_STEPS) -> TuneResult:
    """Measure the reference arm, then the contenders best-predicted first, refitting and pruning after each."""
    def measure_arm(arm: Arm) -> Measurement:
        return measure_candidate(arm.recipe, steps, s.run_root / arm.name, runner, s.tables)

    efficiency = s.prior
    reference = Outcome(s.reference, reference_arm(s.base_data, s.base, s.card, s.reference, steps))
    pool = contenders(rank(s.ranked, efficiency), efficiency)
    outcomes = [Outcome(c, None, dropped="its optimistic prediction cannot beat the best one's pessimistic one")
                for c in s.ranked if c not in pool]
    first = estimated_minutes(s.reference, efficiency) + (estimated_minutes(pool[0], efficiency) if pool else 0)
    if first > budget_minutes:
        raise UserError(f"--budget-minutes {budget_minutes:g} is below the {first:.1f} minutes the reference arm and "
                        "the best candidate need; give more")
    result = TuneResult(s.base_path, efficiency, outcomes, reference, [], budget_minutes, 0.0, s.run_root)
    reference.measurement = measure_arm(reference.arm)
    result.spent_minutes += reference.measurement.minutes
    if not reference.measurement.ok:
        raise UserError(f"the reference arm (the base recipe {s.base_path}) did not run: "
                        f"{reference.measurement.error}; see {reference.measurement.log}")
    efficiency = refit(s.prior, [(s.reference, _step_s(reference))])
    while True:
        pool = rank(pool, efficiency)
        leader = _leader([reference, *result.outcomes])
        for candidate in [c for c in pool if _cannot_win(c, efficiency, leader)]:
            pool.remove(candidate)
            best_case = optimistic_prediction(candidate, efficiency)
            outcomes.append(Outcome(candidate, None, dropped=f"cannot win: optimistic {best_case:,.0f} < leader's "
                                    f"pessimistic {leader.measurement.pessimistic:,.0f} tokens/s/GPU"))
        left = budget_minutes - result.spent_minutes
        affordable = [c for c in pool if estimated_minutes(c, efficiency) <= left]
        if not pool:
            result.stop_reason = "no candidate left that can win"
            break
        if not affordable:
            result.stop_reason = f"budget: {left:.1f} minutes left, the next candidate needs more"
            outcomes.extend(Outcome(c, None, dropped="budget") for c in pool)
            break
        result.rankings.append([c.slug for c in pool])
        candidate = affordable[0]
        pool.remove(candidate)
        outcome = Outcome(candidate, arm_of(candidate.slug, s.base_data, s.base, s.card, candidate, steps),
                          predicted_at_measurement=candidate.tokens_per_s_per_gpu(efficiency.of(candidate.layout)))
        outcome.measurement = measure_arm(outcome.arm)
        outcomes.append(outcome)
        result.spent_minutes += outcome.measurement.minutes
        if outcome.measurement.oom:
            outcome.dropped = _memory_miss(candidate)
        elif not outcome.measurement.ok:
            outcome.dropped = f"the run failed: {outcome.measurement.error}"
        points = [(o.candidate, _step_s(o)) for o in [reference, *result.outcomes]
                  if o.measurement is not None and o.measurement.ok]
        efficiency = refit(s.prior, points)
    result.efficiency = efficiency
    result.winner = _leader([reference, *result.outcomes])
    return result


def _step_s(outcome: Outcome) -> float:
    c = outcome.candidate
    return c.tokens_per_step / c.layout.gpus / outcome.measurement.tokens_per_s_per_gpu


# ---- the winner as a recipe ----------------------------------------------------------------------------------------

def _relative(path: Path, root: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(root))
    except ValueError:
        return str(path)


def winner_recipe(s: Setup, result: TuneResult, config: dict, convergence: dict) -> dict:
    winner, reference = result.winner, result.reference
    m = winner.measurement
    arm = winner.arm if winner.arm is not None else reference.arm
    data = copy.deepcopy(arm.data)
    data["status"] = "measured"
    stack = m.stack
    if stack:
        data["stack"].update(pytorch=stack.get("torch", data["stack"]["pytorch"]),
                             cuda=stack.get("cuda", data["stack"]["cuda"]), nccl=stack.get("nccl", data["stack"]["nccl"]),
                             python=stack.get("python", data["stack"]["python"]),
                             torchtitan=stack.get("torchtitan", data["stack"]["torchtitan"]),
                             source=f"the 'openrecipes stack:' line rank 0 printed ({_relative(m.log, s.root)})")
    data["result"].update(
        tokens_per_s_per_gpu=m.result["tokens_per_s_per_gpu"], usd_per_million_tokens=m.result["usd_per_million_tokens"],
        step_time_cv_percent=m.result["step_time_cv_percent"], mfu=m.result["mfu"],
        measured=datetime.date.fromisoformat(m.result["measured"]) if m.result["measured"] else datetime.date.today(),
        steps_per_run=m.result["steps_per_run"], window=list(m.window), window_tokens=m.result["window_tokens"],
        runs=1, profiler=False, gpu_hours=max(m.result["gpu_hours"] or 0.0, 0.01),
        gpu_hours_note="GPUs x (first to last timestamp of the log), compile warm-up included; machine start not "
                       "included (floored at 0.01)",
        reference_tokens_per_s_per_gpu=reference.measurement.tokens_per_s_per_gpu)
    passed = config["result"] == "pass" and convergence["passed"]
    measured = len(result.measured)
    data["correctness"] = {
        "result": "pass" if passed else "fail",
        "summary": f"`openrecipes tune`: configuration {config['result']}, {m.result['steps_per_run']}-step convergence "
                   f"{'pass' if convergence['passed'] else 'fail'} against the base recipe's stock configuration",
        "reference": f"{_relative(result.run_root / 'reference', s.root)}: {_relative(s.base_path, s.root)} "
                     f"at {m.result['steps_per_run']} steps",
        "configuration": config["result"],
        "component_tests": [],
        "rules": s.base.correctness.rules,
    }
    if convergence["correlation"] is not None and convergence["final_loss_difference"] is not None:
        data["correctness"]["convergence"] = {
            "steps": max(convergence["steps"], 1), "result": "pass" if convergence["passed"] else "fail",
            "correlation": round(convergence["correlation"], 7),
            "final_loss_difference": round(convergence["final_loss_difference"], 6),
            "pointwise_failures": convergence["pointwise_failures"] or 0,
            "note": f"candidate arm: {_relative(m.log.parent, s.root)}; reference arm: "
                    f"{_relative(reference.measurement.log.parent, s.root)}; same rows, seed and machine, one after "
                    "the other"}
    data["runs"] = {"candidate": _relative(m.log.parent, s.root),
                    "reference": _relative(reference.measurement.log.parent, s.root)}
    dropped = sum(1 for o in result.outcomes if o.measurement is None)
    ooms = [o.candidate.label for o in result.outcomes if o.measurement is not None and o.measurement.oom]
    data["notes"] = (
        f"Tuned by `openrecipes tune` from {_relative(s.base_path, s.root)}: {measured} of {len(s.ranked)} candidate "
        f"layouts measured with {m.result['steps_per_run']}-step runs (window {m.window[0]}-{m.window[1]}), {dropped} "
        f"not measured (cannot win or over budget); {result.spent_minutes:.1f} of {result.budget_minutes:g} budget "
        f"minutes spent. Refitted efficiency {result.efficiency.of(winner.candidate.layout):.4f} "
        f"({result.efficiency.points} points). Out of memory: {', '.join(ooms) or 'none'}. "
        f"Stopped: {result.stop_reason}.")
    return data


def _dump(data: dict) -> str:
    class Dumper(yaml.SafeDumper):
        pass

    Dumper.add_representer(str, lambda d, v: d.represent_scalar(
        "tag:yaml.org,2002:str", v, style="|" if "\n" in v else None))
    return yaml.dump(data, Dumper=Dumper, sort_keys=False, width=1000, allow_unicode=True)


def default_recipe_path(s: Setup, winner: Candidate) -> Path:
    card_stem = s.tables.model_files[s.base.model].stem
    return s.root / "recipes" / card_stem / s.base.gpu.type.lower() / f"tuned-{winner.slug}.yaml"


def write_winner(s: Setup, result: TuneResult, out_recipe: Path | None = None) -> Path:
    """Check the winner against the reference arm (config, convergence), then write its recipe."""
    from openrecipes.verify.config import check_config
    from openrecipes.verify.convergence import check_convergence, read_curve

    if result.winner is None:
        raise UserError("no candidate ran to the end; nothing to write (see the table above)")
    scripts = {}
    winner_arm = result.winner.arm if result.winner.arm is not None else result.reference.arm
    for name, outcome, arm in (("reference", result.reference, result.reference.arm),
                               ("candidate", result.winner, winner_arm)):
        scripts[name] = outcome.measurement.log.parent / "command.sh"  # each arm's exact command beside its log
        scripts[name].write_text(arm.data["run"], encoding="utf-8")
    result.config = check_config(scripts["candidate"], scripts["reference"])
    result.convergence = check_convergence(read_curve(result.winner.measurement.log),
                                           read_curve(result.reference.measurement.log))
    data = winner_recipe(s, result, result.config, result.convergence)
    path = Path(out_recipe) if out_recipe else default_recipe_path(s, result.winner.candidate)
    path.parent.mkdir(parents=True, exist_ok=True)
    header = "# Written by `openrecipes tune` from measured short runs; fields: schema/recipe.schema.yaml.\n"
    path.write_text(header + _dump(data), encoding="utf-8")
    result.recipe_path = path
    return path


# ---- dry run -------------------------------------------------------------------------------------------------------

def dry_run_text(s: Setup, budget_minutes: float, steps: int = MEASURE_STEPS) -> str:
    efficiency = s.prior
    ranked = rank(s.ranked, efficiency)
    pool = contenders(ranked, efficiency)
    reference_minutes = estimated_minutes(s.reference, efficiency, steps)
    chosen = within_budget(pool, efficiency, budget_minutes - reference_minutes)
    lines = [f"tune {s.base.model} on {s.base.gpu.count} x {s.base.gpu.type} from {_relative(s.base_path, s.root)}: "
             f"{len(ranked)} fitting torchtitan layouts, {len(pool)} can beat the best one's pessimistic prediction "
             f"(error bound {HELD_OUT_ERROR_BOUND:.1%}), {len(chosen)} fit {budget_minutes:g} minutes after the "
             f"{reference_minutes:.1f}-minute reference arm; predicted, not measured",
             f"{'#':>3}  {'candidate':<44} {'tokens/s/GPU':>12} {'range':>15} {'GiB':>6} {'minutes':>7}  plan"]
    for number, c in enumerate(ranked, 1):
        tps = c.tokens_per_s_per_gpu(efficiency.of(c.layout))
        plan = "measure" if c in chosen else "budget" if c in pool else "cannot win"
        lines.append(f"{number:>3}  {c.label:<44} {tps:>12,.0f} "
                     f"{pessimistic_prediction(c, efficiency):>7,.0f}-{optimistic_prediction(c, efficiency):<7,.0f} "
                     f"{c.memory_gib:>6.1f} {estimated_minutes(c, efficiency, steps):>7.1f}  {plan}")
    total = reference_minutes + sum(estimated_minutes(c, efficiency, steps) for c in chosen)
    lines += ["", f"estimated device time: {total:.1f} of {budget_minutes:g} minutes (at most; candidates that cannot "
              "win after a measurement are skipped); runs under " + _relative(s.run_root, s.root), "",
              f"# reference arm: {_relative(s.base_path, s.root)} at {steps} steps"]
    reference = reference_arm(s.base_data, s.base, s.card, s.reference, steps)
    lines.append(run_launch(reference.recipe, s.card, steps).script().rstrip())
    for c in chosen:
        arm = arm_of(c.slug, s.base_data, s.base, s.card, c, steps)
        lines += ["", f"# {c.label} -> {_relative(s.run_root / c.slug, s.root)}",
                  run_launch(arm.recipe, s.card, steps).script().rstrip()]
    return "\n".join(lines) + "\n"


def summary_text(result: TuneResult) -> str:
    lines = [f"{'candidate':<44} {'predicted':>10} {'measured':>10} {'CV %':>6}  verdict"]
    for o in [result.reference, *result.outcomes]:
        if o.measurement is None:
            continue
        m = o.measurement
        predicted = f"{o.predicted_at_measurement:,.0f}" if o.predicted_at_measurement else "-"
        measured = f"{m.tokens_per_s_per_gpu:,.0f}" if m.ok else "-"
        cv = f"{m.step_time_cv_percent:.2f}" if m.ok else "-"
        verdict = "reference arm" if o is result.reference else (o.dropped or "measured")
        lines.append(f"{o.candidate.label:<44} {predicted:>10} {measured:>10} {cv:>6}  "
                     f"{'WINNER; ' if o is result.winner else ''}{verdict}")
    skipped = sum(1 for o in result.outcomes if o.measurement is None)
    lines.append(f"{len(result.measured)} measured, {skipped} not measured; {result.spent_minutes:.1f} of "
                 f"{result.budget_minutes:g} minutes; stopped: {result.stop_reason}")
    return "\n".join(lines) + "\n"
