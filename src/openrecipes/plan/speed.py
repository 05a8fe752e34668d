"""Step time of one layout: its operators' compute (openrecipes.plan.ops, timed by openrecipes.plan.compute, over a
fitted residual efficiency), exposed communication, pipeline bubble, data-parallel synchronisation, host-side costs,
the optimizer step and the host-side optimizer.

A step runs (microbatches + (PP-1)/VPP) pipeline slots of one microbatch: its compute and per-layer collectives
(TP, CP, EP, PP sends), or the host work the GPU waits for when that takes longer (eager selective AC), plus a
per-layer host cost; then the data-parallel gradient/parameter sync and the offloaded optimizer update.
What each collective costs on the topology, and what of it the step pays, is openrecipes.plan.comm's.
Which mechanisms an engine has (FSDP or the distributed optimizer, op-level selective AC, host costs, ring
attention) its LayoutRules say (engines/<name>/layouts.py); which levers a layout pulls (torch.compile, offload, a
low precision), its engine's lever block (engines/<name>/levers.py).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache

from openrecipes.plan.comm import dp_sync_s, microbatch_comm
from openrecipes.plan.compute import ComputeTime, Part, compute_time, hbm_bytes_per_s, measured
from openrecipes.plan.constants import Calibration, Links
from openrecipes.plan.layouts import Layout
from openrecipes.plan.levers import gemm_precision, time_effect
from openrecipes.plan.memory import amp_composite_norms, stage_params_per_gpu
from openrecipes.plan.ops import layer_ops, microbatch_tokens, optimizer_bytes
from openrecipes.plan.shape import ModelShape
from openrecipes.plan.variants import efficiency as variant_efficiency

# The FP32 composite norms of eager AMP (openrecipes.plan.memory.AMP_COMPOSITE_NORM_BYTES) are memory-bound
# elementwise work; recompute reruns their forward, a third of forward + backward.
COMPOSITE_NORM_RECOMPUTE_FACTOR = {"none": 1.0, "selective": 4 / 3, "full": 4 / 3}


@dataclass(frozen=True)
class StepTime:
    microbatch_compute_s: float  # the operators' time (openrecipes.plan.compute) over the residual efficiency
    microbatch_comm_s: dict[str, float]  # exposed seconds per microbatch by kind (tp, cp, ep, pp, fsdp)
    pipeline_slots: float  # microbatches + bubble slots
    microbatches: int
    dp_s: float
    offload_s: float
    microbatch_norm_s: float = 0.0  # eager AMP's FP32 composite norms (memory-bound, not at the FLOP efficiency)
    microbatch_overhead_s: float = 0.0  # host-side cost per microbatch (e.g. torchtitan), independent of tokens
    microbatch_host_s: float = 0.0  # host work the GPU waits for only when it outlasts the GPU's (eager SAC policy)
    lever_speedup: float = 1.0  # measured time factor of the layout's levers (openrecipes.plan.levers)
    unmeasured_levers: tuple[str, ...] = ()  # levers predicted as without them: no run has measured their effect
    optimizer_s: float = 0.0  # the optimizer step on the GPU (memory-bound), once a step
    # the low precision (fp8, mxfp8, nvfp4) whose GEMMs are timed at the datasheet's peak, no probe measuring them
    datasheet_precision: str | None = None

    # Read many times while layouts are ranked and exported: worked out once (fields, cheaper than properties).
    microbatch_gpu_s: float = field(init=False, repr=False, compare=False)
    microbatch_s: float = field(init=False, repr=False, compare=False)
    without_levers_s: float = field(init=False, repr=False, compare=False)
    total_s: float = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        gpu_s = self.microbatch_compute_s + self.microbatch_norm_s + sum(self.microbatch_comm_s.values())
        microbatch_s = max(gpu_s, self.microbatch_host_s) + self.microbatch_overhead_s
        without_levers_s = self.pipeline_slots * microbatch_s + self.dp_s + self.offload_s + self.optimizer_s
        object.__setattr__(self, "microbatch_gpu_s", gpu_s)
        object.__setattr__(self, "microbatch_s", microbatch_s)
        object.__setattr__(self, "without_levers_s", without_levers_s)
        object.__setattr__(self, "total_s", without_levers_s / self.lever_speedup)

    def parts_s(self) -> dict[str, float]:
        """Seconds per step by part; the bubble holds the idle slots' compute and communication alike."""
        parts = {"compute": self.microbatches * self.microbatch_compute_s}
        if self.microbatch_norm_s:
            parts["composite_norms"] = self.microbatches * self.microbatch_norm_s
        if self.microbatch_overhead_s:
            parts["host_overhead"] = self.microbatches * self.microbatch_overhead_s
        if self.microbatch_host_s > self.microbatch_gpu_s:
            parts["host_wait"] = self.microbatches * (self.microbatch_host_s - self.microbatch_gpu_s)
        parts |= {kind: self.microbatches * seconds for kind, seconds in self.microbatch_comm_s.items()}
        bubble_slots = self.pipeline_slots - self.microbatches
        parts["bubble"] = bubble_slots * self.microbatch_s
        parts |= {"dp": self.dp_s, "offload": self.offload_s}
        if self.optimizer_s:
            parts["optimizer"] = self.optimizer_s
        if self.lever_speedup != 1.0:
            parts["levers"] = self.total_s - self.without_levers_s
        return {name: round(seconds, 4) for name, seconds in parts.items()}


def _heaviest_stage_params(shape: ModelShape, layout: Layout) -> tuple[float, float]:
    """(non-expert, expert) parameters per GPU on the stage holding the most: it sets the sync and update time."""
    return _heaviest(stage_params_per_gpu(shape, layout), layout.dp * layout.cp, layout.expert_data_parallel)


@cache  # a request's layouts share a few parameter splits and shard counts
def _heaviest(per_stage: tuple[tuple[float, float], ...], dense_shards: int, expert_shards: int) -> tuple[float, float]:
    return max(per_stage, key=lambda params: params[0] / dense_shards + params[1] / expert_shards)


def _offload_s(layout: Layout, calibration: Calibration, heaviest: tuple[float, float]) -> float:
    if not layout.levers.offload_fraction:
        return 0.0
    non_expert, expert = heaviest
    sharded = non_expert / (layout.dp * layout.cp) + expert / layout.expert_data_parallel
    return layout.levers.offload_fraction * sharded / calibration.cpu_optimizer_params_per_s_per_gpu


def _imbalance(shape: ModelShape, layout: Layout, calibration: Calibration, balanced_routing: bool) -> float:
    """How much longer the busiest EP rank works on its routed experts than the mean rank. A trained router spreads
    tokens unevenly: each expert's load varies by `routing_load_cv` (its coefficient of variation, fitted); a rank
    holding E/EP experts sums their loads, so its load varies by cv / sqrt(E/EP), and the busiest of EP ranks sits
    about sqrt(2 ln EP) of those above the mean (the expected maximum of EP normal draws). One rank (EP 1) holds every
    expert and waits on none; a benchmark that force-balances its router spreads tokens evenly: 1 there."""
    if balanced_routing or layout.ep == 1 or not shape.is_moe:
        return 1.0
    return 1 + calibration.routing_load_cv * math.sqrt(2 * math.log(layout.ep) / (shape.experts / layout.ep))


def step_times(shape: ModelShape, layouts: Sequence[Layout], links: Links, part: Part, calibration: Calibration,
               global_batch: int, row_tokens: int, balanced_routing: bool = False,
               compute_memo: dict[tuple, ComputeTime] | None = None) -> list[StepTime]:
    """The step of each of a group of layouts alike but for the optimizer fraction offloaded (an enumerated group):
    the fraction changes the host update only, so the rest is worked out once. `part`: what compute reads of the
    part (openrecipes.plan.compute.part_of), read once a request. `compute_memo`: the operators' times already
    worked out for this request (the same shape, part, calibration and rows), by what they depend on: layouts that
    differ in PP, VP or DP alone share them."""
    layout = layouts[0]
    microbatches = layout.microbatches(global_batch)
    mean_rows = global_batch / layout.dp / microbatches  # the last microbatch may be short
    layers = max(layout.stage_layers)  # on the heaviest stage
    rules = layout.rules
    tokens = microbatch_tokens(layout, mean_rows, row_tokens)
    precision = gemm_precision(layout, links.gpu_type)
    load = _imbalance(shape, layout, calibration, balanced_routing)
    key = (layout.engine, layers, layout.tp, layout.ep, layout.etp, layout.recompute, tokens, precision, load)
    timed = compute_memo.get(key) if compute_memo is not None else None
    if timed is None:
        timed = compute_time(layer_ops(shape, layout, tokens, row_tokens), part, precision, calibration,
                             layout.engine, load)
        if compute_memo is not None:
            compute_memo[key] = timed
    attention_s = timed.attention_s
    if rules.ring_attention and layout.cp > 1:  # ring attention's smaller kernels over CP chunks
        attention_s /= calibration.cp_attention_efficiency
    seconds = (timed.gemm_s + attention_s + sum(timed.memory_s.values())) \
        / variant_efficiency(calibration, layout.engine, links.variant, links.catalog_root)
    if layout.levers.compile:
        seconds /= calibration.compile_speedup
    if layout.recompute == "selective" and rules.selective_saved_matmul_fraction is None:
        seconds *= calibration.selective_recompute_time_factor[layout.engine]
    norm_s = 0.0
    if amp_composite_norms(layout):
        normalized = mean_rows * row_tokens * layers * shape.norm_width / layout.tp
        norm_s = normalized * calibration.amp_composite_norm_s_per_element \
            * COMPOSITE_NORM_RECOMPUTE_FACTOR[layout.recompute]
    levers = time_effect(layout, links.gpu_type)
    # a low precision no probe of the part measured: its gain is the datasheet's peak, not a measurement
    datasheet = precision if precision and not measured(part, precision) else None
    heaviest = _heaviest_stage_params(shape, layout)  # sets the FSDP gathers, the DP sync and the host update
    comm = microbatch_comm(shape, layout, links, calibration, heaviest,
                           _imbalance(shape, layout, calibration, balanced_routing), seconds)
    pipeline_slots = microbatches + (layout.pp - 1) / layout.vpp
    dp_s = dp_sync_s(layout, links, calibration, heaviest)
    overhead_s = calibration.microbatch_overhead_s_per_layer * layers if rules.host_overhead_per_microbatch else 0.0
    eager_sac = rules.selective_saved_matmul_fraction is not None and layout.recompute == "selective"
    host_s = calibration.eager_sac_overhead_s_per_layer * layers if eager_sac and not layout.levers.compile else 0.0
    return [StepTime(
        microbatch_compute_s=seconds, microbatch_comm_s=dict(comm),  # each step its own dict
        pipeline_slots=pipeline_slots, microbatches=microbatches, dp_s=dp_s, microbatch_norm_s=norm_s,
        offload_s=_offload_s(each, calibration, heaviest), microbatch_overhead_s=overhead_s, microbatch_host_s=host_s,
        lever_speedup=levers.speedup, unmeasured_levers=levers.unmeasured,
        optimizer_s=_optimizer_s(each, part, calibration, heaviest), datasheet_precision=datasheet)
        for each in layouts]


def _optimizer_s(layout: Layout, part: Part, calibration: Calibration, heaviest: tuple[float, float]) -> float:
    """The optimizer step over the parameters this GPU updates (its shard, less the share on the host): memory-bound
    (openrecipes.plan.ops.optimizer_bytes)."""
    non_expert, expert = heaviest
    sharded = (non_expert / (layout.dp * layout.cp) + expert / layout.expert_data_parallel) \
        * (1 - layout.levers.offload_fraction)
    return optimizer_bytes(sharded) / hbm_bytes_per_s(part, calibration)
