"""Predict every valid layout of a model on N GPUs: does it fit, how fast, what it costs; ranked.

`predict` returns them as Predictions; `plan_table` returns them exported (`PredictedLayout`, the objects
`openrecipes plan --json` prints); the site's tables are the same objects, computed by openrecipes.plan.pages.
"""

from __future__ import annotations

import gc
import heapq
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from openrecipes import figures
from openrecipes.catalog.hardware import (
    ReferenceTables,
    load_reference_tables,
    peak_column,
    precision_peak_flops,
    variant_id,
    variant_issue,
)
from openrecipes.engines.registry import PLANNER_DEFAULT, engine_named
from openrecipes.errors import UserError
from openrecipes.plan.compute import ComputeTime, Part, part_of
from openrecipes.plan.constants import GIB, Calibration, Links, calibration, links
from openrecipes.plan.export_model import PredictedLayout
from openrecipes.plan.layouts import LOW_PRECISIONS, EngineName, Layout, enumerate_layouts
from openrecipes.plan.levers import LeverSearch, lever_groups
from openrecipes.plan.memory import MemoryEstimate, memories_in_order
from openrecipes.plan.shape import ModelShape, model_shape
from openrecipes.plan.speed import StepTime, step_times
from openrecipes.plan.trust import WITH_KERNELS, Interval, interval, memory_margin


@dataclass(frozen=True)
class PlanRequest:
    model: str
    gpu_type: str
    gpus: int
    row_tokens: int = 8192
    global_batch: int = 128
    engine: EngineName = PLANNER_DEFAULT.name
    grad_reduce_bf16: bool = False
    # torchtitan levers every layout pulls (openrecipes.plan.levers): kernels, attention backend, float8 scaling;
    # the ones not fixed here are searched as `search` says.
    kernels: tuple[str, ...] = ()
    attention: str | None = None
    float8: str | None = None
    search: LeverSearch = LeverSearch()
    # Megatron: Transformer Engine's precision of every layout's block GEMMs (fp8, mxfp8, nvfp4; None: BF16)
    low_precision: str | None = None
    # the hardware variant (a key of hardware/gpus.yaml of gpu_type); None: the type's default, the part a user rents
    variant: str | None = None
    # MoE: the tokens spread evenly over the experts (a benchmark that force-balances its router), not as a trained
    # router spreads them
    balanced_routing: bool = False


@dataclass(frozen=True)
class Context:
    """Everything fixed across one request's layouts."""
    request: PlanRequest
    shape: ModelShape
    links: Links
    peak_flops: float
    usd_per_gpu_hour: float | None
    calibration: Calibration
    memory_margin: float  # share of the predicted allocator peak a layout must leave free (openrecipes.plan.trust)
    kernel_memory_margin: float  # the same for a layout that pulls a Liger kernel
    part: Part  # the part's datasheet and probe as compute reads them


@dataclass(frozen=True)
class Prediction:
    layout: Layout
    memory: MemoryEstimate
    step: StepTime
    capacity_gib: float
    tokens_per_s_per_gpu: float
    mfu: float
    usd_per_million_tokens: float | None
    gpu_type: str
    variant: str
    margin_gib: float  # the memory margin on this layout's predicted allocator peak
    headroom_gib: float  # capacity less the predicted peak
    peak_fits: bool  # the predicted peak is below capacity (it may still run out of memory inside the margin)
    fits: bool  # the predicted peak leaves at least the margin free: a layout the planner bets on
    moe: bool  # the model is a mixture of experts (its range is set by MoE points where there are enough)
    catalog_root: Path | None = None  # the catalog whose hardware/gpus.yaml holds the part

    @property
    def fit_label(self) -> str:
        return "fits" if self.fits else "inside the margin" if self.peak_fits else "does not fit"

    @property
    def interval(self) -> Interval:
        return interval(self.layout.engine, self.variant, self.layout, self.tokens_per_s_per_gpu, self.moe,
                        self.catalog_root)

    @property
    def _largest_part(self) -> str:
        return max(self.memory.parts, key=self.memory.parts.__getitem__)

    @property
    def reason(self) -> str:
        largest = self._largest_part
        return (f"{self.fit_label}: {self.memory.total_gib:.1f} GiB of {self.capacity_gib:.1f} GiB on stage "
                f"{self.memory.stage}, headroom {self.headroom_gib:.1f} GiB against a {self.margin_gib:.1f} GiB margin "
                f"(largest part {largest.replace('_', ' ')}: {self.memory.parts[largest] / GIB:.1f} GiB)"
                + self.precision_note)

    @property
    def precision_note(self) -> str:
        """Where a low precision's gain comes from the datasheet: what the row rests on."""
        precision = self.step.datasheet_precision
        if precision is None:
            return ""
        return (f"; its {precision.upper()} GEMMs are timed at the datasheet's {precision.upper()} peak: predicted, "
                f"not measured on {self.variant}")

    @property
    def short_reason(self) -> str:
        largest = self._largest_part
        verdict = "margin" if self.peak_fits else "no"
        return (f"{verdict}: {self.memory.total_gib:.1f} GiB; "
                f"{largest.replace('_', ' ')} {self.memory.parts[largest] / GIB:.1f}")

    def exported(self) -> PredictedLayout:
        """The prediction as `plan --json` prints it and plans/*.json store it: figures rounded for reading.
        Validated from one dict (the interval nested in it): a single pass of pydantic's validator."""
        layout = self.layout
        return PredictedLayout.model_validate({
            **layout.flat_fields(), "variant": self.variant, "label": layout.label,
            "sequence_parallel": layout.sequence_parallel, "unmeasured_levers": list(self.step.unmeasured_levers),
            "fits": self.fits, "peak_fits": self.peak_fits, "reason": self.reason,
            "memory_gib": round(self.memory.total_gib, 2), "capacity_gib": self.capacity_gib,
            "headroom_gib": round(self.headroom_gib, 2), "margin_gib": round(self.margin_gib, 2),
            "memory_parts": self.memory.parts_gib(), "step_time_s": round(self.step.total_s, 4),
            "step_parts_s": self.step.parts_s(), "tokens_per_s_per_gpu": round(self.tokens_per_s_per_gpu, 1),
            "interval": vars(self.interval), "mfu": round(self.mfu, 4), "usd_per_million_tokens": (
                round(self.usd_per_million_tokens, 4) if self.usd_per_million_tokens is not None else None)})


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Build a request's thousands of predictions or rows without Python's cycle collector: they hold no reference
    cycles, yet each of its passes walks every object built so far (benchmarks/plan_speed.py measures the cost)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def context(request: PlanRequest, tables: ReferenceTables | None = None) -> Context:
    tables = tables or load_reference_tables()
    if request.model not in tables.models:
        raise UserError(f"unknown model '{request.model}'; known: {', '.join(sorted(tables.models))} (models/*.yaml)")
    if request.gpu_type not in tables.gpus:
        raise UserError(f"unknown GPU type '{request.gpu_type}'; known: {', '.join(tables.gpus)} (hardware/gpus.yaml)")
    variant = request.variant or variant_id(tables.gpus[request.gpu_type], tables)
    if problem := variant_issue(request.gpu_type, variant, tables):
        raise UserError(problem)
    spec = tables.variants[variant]
    gpu_links = links(variant, spec, tables.root)
    node = gpu_links.gpus_per_node
    if request.gpus < 1 or (request.gpus > node and request.gpus % node):
        raise UserError(f"--gpus {request.gpus}: not a whole number of {node}-GPU {request.gpu_type} nodes "
                        f"(use 1..{node} or a multiple of {node})")
    if request.row_tokens < 1 or request.global_batch < 1:
        raise UserError("--row-tokens and --global-batch must be positive")
    if request.grad_reduce_bf16 and not engine_named(request.engine).has_lever("grad_reduce_bf16"):
        raise UserError(f"--grad-reduce-bf16: {request.engine} has no BF16 gradient reduction (it is Megatron's "
                        "--grad-reduce-in-bf16); leave it out")
    priced = sorted(name for name, row in tables.instances.items() if row.gpu == request.gpu_type)
    price = (figures.usd_per_gpu_hour(tables.instances[priced[0]].usd_per_hour, tables.instances[priced[0]].gpus)
             if priced else None)
    return Context(request, model_shape(tables.models[request.model]), gpu_links,
                   spec.peak_bf16_flops, price, calibration(),
                   memory_margin(request.engine).margin, memory_margin(request.engine + WITH_KERNELS).margin,
                   part_of(variant, tables.root))


def predict_layout(ctx: Context, layout: Layout) -> Prediction:
    return _worked_out(ctx, [(layout, _memories(ctx, [layout], False)[0])])[0]


def _memories(ctx: Context, layouts: Sequence[Layout], drop_dominated: bool) -> list[MemoryEstimate]:
    """The memory of each of a group of layouts alike but for the optimizer fraction offloaded (an enumerated group,
    smallest fraction first). With `drop_dominated`, the fractions after the first that fits are left out: they
    differ from it only by more host work and less memory, so they fit and run slower (what `plan` ranks never
    needs them)."""
    memories = []
    for memory in memories_in_order(ctx.shape, layouts, ctx.request.global_batch, ctx.calibration.runtime_reserve_gib):
        memories.append(memory)
        if drop_dominated and _fits(ctx, layouts[len(memories) - 1], memory):
            break
    return memories


def _worked_out(ctx: Context, pairs: Sequence[tuple[Layout, MemoryEstimate]],
                compute_memo: dict[tuple, ComputeTime] | None = None) -> list[Prediction]:
    """The predictions of layouts of one group (alike but for the offloaded fraction) with their memories;
    `compute_memo` as step_times takes it, for this context alone."""
    if not pairs:
        return []
    request = ctx.request
    steps = step_times(ctx.shape, [layout for layout, _ in pairs], ctx.links, ctx.part, ctx.calibration,
                       request.global_batch, request.row_tokens, request.balanced_routing, compute_memo)
    return [_prediction(ctx, layout, memory, step) for (layout, memory), step in zip(pairs, steps, strict=True)]


def _margin_gib(ctx: Context, layout: Layout, memory: MemoryEstimate) -> float:
    return ((ctx.kernel_memory_margin if layout.levers.kernels else ctx.memory_margin)
            * (memory.total_gib - ctx.calibration.runtime_reserve_gib))


def _fits(ctx: Context, layout: Layout, memory: MemoryEstimate) -> bool:
    """Prediction.fits, before the step is worked out."""
    return ctx.links.capacity_gib - memory.total_gib >= _margin_gib(ctx, layout, memory)


def _prediction(ctx: Context, layout: Layout, memory: MemoryEstimate, step: StepTime) -> Prediction:
    request = ctx.request
    tokens = request.global_batch * request.row_tokens
    throughput = figures.tokens_per_s_per_gpu(tokens, step.total_s, layout.gpus)
    headroom, margin = ctx.links.capacity_gib - memory.total_gib, _margin_gib(ctx, layout, memory)
    return Prediction(
        layout=layout, memory=memory, step=step, capacity_gib=ctx.links.capacity_gib, tokens_per_s_per_gpu=throughput,
        mfu=figures.mfu(ctx.shape.active_params, throughput, ctx.peak_flops),
        usd_per_million_tokens=(figures.usd_per_million_tokens(ctx.usd_per_gpu_hour, throughput)
                                if ctx.usd_per_gpu_hour else None),
        gpu_type=request.gpu_type, variant=ctx.links.variant, margin_gib=margin, headroom_gib=headroom,
        peak_fits=headroom >= 0, fits=headroom >= margin, moe=ctx.shape.is_moe, catalog_root=ctx.links.catalog_root)


def predict(request: PlanRequest, tables: ReferenceTables | None = None,
            fitting_only: bool = False) -> list[Prediction]:
    """Every valid layout, ranked: the ones that fit with the margin by predicted tokens/s, then the ones inside the
    margin the same way, then the rest by how close they come. `fitting_only`: the ones that fit alone."""
    return _ranked(request, tables, fitting_only, None).predictions


@dataclass(frozen=True)
class Ranking:
    predictions: list[Prediction]  # ranked as `predict` ranks them
    valid: int  # every valid layout, its step worked out or not


def ranking(request: PlanRequest, misses: int | None = None, tables: ReferenceTables | None = None) -> Ranking:
    """`predict`'s ranking and the count of valid layouts. With `misses`, for a table of the layouts that fit (with
    the margin or inside it) and the `misses` that come closest of the others: the step of a layout over the part's
    capacity is worked out only for those (most layouts of a large model on many GPUs are over it), the same
    predictions in the same order as `predict`'s first ones."""
    return _ranked(request, tables, False, misses)


def _ranked(request: PlanRequest, tables: ReferenceTables | None, fitting_only: bool, misses: int | None) -> Ranking:
    ctx = context(request, tables)
    if engine_named(request.engine).lacking(kernels=request.kernels, attention=request.attention,
                                            float8=request.float8):
        raise UserError(f"--kernels, --attention and --float8 are torchtitan levers, which {request.engine} lacks: "
                        "add --engine torchtitan (Megatron's FP8, MXFP8 and NVFP4 are --precision)")
    if request.low_precision is not None:
        _check_low_precision(request, tables or load_reference_tables())
    lever_choices = lever_groups(request.engine, request.gpu_type, request.search, request.kernels,
                                 request.attention, request.float8, request.grad_reduce_bf16, request.low_precision)
    groups = enumerate_layouts(ctx.shape, request.gpus, request.row_tokens, request.global_batch, request.engine,
                               ctx.links.gpus_per_nvlink_domain, lever_choices)
    predictions: list[Prediction] = []
    over: list[tuple[float, int, Layout, MemoryEstimate]] = []  # over the capacity, in enumeration order
    memo: dict[tuple, ComputeTime] = {}  # the operators' times of layouts alike but for PP, VP or DP
    valid = 0
    with _collector_paused():
        for group in groups:
            pairs = list(zip(group, _memories(ctx, group, True), strict=False))
            valid += len(pairs)
            if fitting_only:
                pairs = [(layout, memory) for layout, memory in pairs if _fits(ctx, layout, memory)]
            elif misses is not None:  # over the capacity: set aside, its step worked out below if it comes closest
                under = []
                for layout, memory in pairs:
                    if memory.total_gib > ctx.links.capacity_gib:
                        over.append((memory.total_bytes, len(over), layout, memory))
                    else:
                        under.append((layout, memory))
                pairs = under
            predictions += _worked_out(ctx, pairs, memo)
        for _, _, layout, memory in heapq.nsmallest(misses or 0, over):
            predictions += _worked_out(ctx, [(layout, memory)], memo)
    if not valid:
        raise UserError(f"no valid {request.engine} layout of {request.model} on {request.gpus} GPUs with global batch "
                        f"{request.global_batch} and {request.row_tokens}-token rows")
    ranked = sorted(predictions, key=lambda p: (not p.fits, not p.peak_fits,
                                                -p.tokens_per_s_per_gpu if p.peak_fits else p.memory.total_bytes))
    return Ranking(ranked, valid)


def _check_low_precision(request: PlanRequest, tables: ReferenceTables) -> None:
    """--precision: a Megatron lever whose GEMM speed-up is fitted, on a GPU type with tensor cores for it."""
    precision = request.low_precision
    if precision not in LOW_PRECISIONS:
        raise UserError(f"--precision {precision}: not one of {', '.join(LOW_PRECISIONS)}")
    if not engine_named(request.engine).has_lever("low_precision"):
        raise UserError(f"--precision is Megatron's (Transformer Engine); {request.engine}'s FP8 is --float8")
    spec = tables.variants[request.variant] if request.variant else tables.gpus[request.gpu_type]
    if precision_peak_flops(spec, precision) is None:
        raise UserError(f"--precision {precision}: {variant_id(spec, tables)} has no dense {precision} peak; where "
                        f"its vendor publishes one, add {peak_column(precision)} to its block of hardware/gpus.yaml")


def plan_table(model: str, gpu_type: str, gpus: int, row_tokens: int = 8192, global_batch: int = 128,
               engine: EngineName = PLANNER_DEFAULT.name, grad_reduce_bf16: bool = False, top: int | None = None,
               root: Path | None = None, kernels: tuple[str, ...] = (), attention: str | None = None,
               float8: str | None = None, search: LeverSearch | None = None,
               low_precision: str | None = None, variant: str | None = None) -> list[PredictedLayout]:
    """The ranked predictions as exported: one `--json` object per layout, the first `top` (None: all)."""
    request = PlanRequest(model, gpu_type, gpus, row_tokens, global_batch, engine, grad_reduce_bf16, kernels,
                          attention, float8, search or LeverSearch(), low_precision, variant)
    ranked = predict(request, load_reference_tables(root))
    with _collector_paused():
        return [p.exported() for p in ranked[:top]]
