"""Step time of one layout: compute at a calibrated fraction of peak, exposed communication, pipeline bubble,
data-parallel synchronisation, host-side costs and the host-side optimizer.

A step runs (microbatches + (PP-1)/VPP) pipeline slots of one microbatch: its compute and per-layer collectives
(TP, CP, EP, PP sends), or the host work the GPU waits for when that takes longer (eager selective AC), plus a
per-layer host cost; then the data-parallel gradient/parameter sync and the offloaded optimizer update.
What each collective costs on the topology, and what of it the step pays, is openrecipes.plan.comm's.
Which mechanisms an engine has (FSDP or the distributed optimizer, op-level selective AC, host costs, ring
attention, torch.compile) its LayoutRules say (engines/<name>/layouts.py).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache

from openrecipes.plan.comm import dp_sync_s, microbatch_comm
from openrecipes.plan.constants import Calibration, Links
from openrecipes.plan.layouts import LOW_PRECISIONS, Layout
from openrecipes.plan.levers import time_effect
from openrecipes.plan.memory import amp_composite_norms, stage_params_per_gpu
from openrecipes.plan.shape import ModelShape
from openrecipes.plan.variants import efficiency as variant_efficiency

# The FP32 composite norms of eager AMP (openrecipes.plan.memory.AMP_COMPOSITE_NORM_BYTES) are memory-bound
# elementwise work; recompute reruns their forward, a third of forward + backward.
COMPOSITE_NORM_RECOMPUTE_FACTOR = {"none": 1.0, "selective": 4 / 3, "full": 4 / 3}


@dataclass(frozen=True)
class StepTime:
    microbatch_compute_s: float  # model FLOPs at the calibrated efficiency
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

    # Read many times while layouts are ranked and exported: worked out once (fields, cheaper than properties).
    microbatch_gpu_s: float = field(init=False, repr=False, compare=False)
    microbatch_s: float = field(init=False, repr=False, compare=False)
    without_levers_s: float = field(init=False, repr=False, compare=False)
    total_s: float = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        gpu_s = self.microbatch_compute_s + self.microbatch_norm_s + sum(self.microbatch_comm_s.values())
        microbatch_s = max(gpu_s, self.microbatch_host_s) + self.microbatch_overhead_s
        without_levers_s = self.pipeline_slots * microbatch_s + self.dp_s + self.offload_s
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
    if not layout.offload_fraction:
        return 0.0
    non_expert, expert = heaviest
    sharded = non_expert / (layout.dp * layout.cp) + expert / layout.expert_data_parallel
    return layout.offload_fraction * sharded / calibration.cpu_optimizer_params_per_s_per_gpu


def _recomputed_flops_per_token(shape: ModelShape, layout: Layout, row_tokens: int) -> float:
    """Forward FLOPs a recompute policy runs again. Full recompute reruns every decoder layer's forward (its matmuls,
    2 FLOPs per parameter, and its attention scores, a third of their training FLOPs); the embedding and the output
    head are outside the checkpointed layers. Op-level selective AC (torchtitan's) reruns the block matmuls it did
    not save and nothing else. (Megatron's selective recompute reruns elementwise work: a time factor.)"""
    if layout.recompute == "full":
        return 2 * shape.block_matmul_params + shape.attention_flops_per_token(row_tokens) / 3
    saved_fraction = layout.rules.selective_saved_matmul_fraction
    if layout.recompute == "selective" and saved_fraction is not None:
        return (1 - saved_fraction) * 2 * shape.block_matmul_params
    return 0.0


def _routed_expert_tokens(shape: ModelShape, layout: Layout) -> float:
    """Tokens one local expert multiplies per microbatch: this GPU's tokens (its sequence shard with ETP 1), times
    the copies each token sends, gathered from the EP ranks and spread over the experts."""
    tokens = layout.max_tokens_per_gpu / (layout.tp if layout.etp == 1 else 1)
    return tokens * shape.router_topk * layout.ep / shape.experts


def _grouped_gemm_extra_flops(shape: ModelShape, layout: Layout, calibration: Calibration,
                              balanced_routing: bool) -> float:
    """Routed-expert FLOPs per token counted again for small groups: a grouped GEMM over m tokens runs at
    m / (m + m0) of the dense efficiency (m0: grouped_gemm_half_rows), so its time is that of (1 + m0/m) times its
    FLOPs, in every pass that runs them; torchtitan's routed experts run at torchtitan_expert_efficiency of that."""
    if not shape.is_moe:
        return 0.0
    # Forward and backward (3 forwards' FLOPs), and the forward again where recompute reruns the routed experts.
    saved_fraction = layout.rules.selective_saved_matmul_fraction
    reruns = {"full": 1.0, "selective": 1 - saved_fraction if saved_fraction is not None else 0.0}.get(
        layout.recompute, 0.0)
    routed = 2 * (3 + reruns) * shape.moe_layers * shape.router_topk * shape.expert_params
    slowdown = 1 + calibration.grouped_gemm_half_rows / _routed_expert_tokens(shape, layout)
    slowdown /= getattr(calibration, f"{layout.engine}_expert_efficiency")  # fitted per engine, by its name
    return routed * (slowdown * _imbalance(shape, layout, calibration, balanced_routing) - 1)


def _imbalance(shape: ModelShape, layout: Layout, calibration: Calibration, balanced_routing: bool) -> float:
    """How much longer the busiest EP rank works on its routed experts than the mean rank. A trained router spreads
    tokens unevenly: each expert's load varies by `routing_load_cv` (its coefficient of variation, fitted); a rank
    holding E/EP experts sums their loads, so its load varies by cv / sqrt(E/EP), and the busiest of EP ranks sits
    about sqrt(2 ln EP) of those above the mean (the expected maximum of EP normal draws). One rank (EP 1) holds every
    expert and waits on none; a benchmark that force-balances its router spreads tokens evenly: 1 there."""
    if balanced_routing or layout.ep == 1 or not shape.is_moe:
        return 1.0
    return 1 + calibration.routing_load_cv * math.sqrt(2 * math.log(layout.ep) / (shape.experts / layout.ep))


def _low_precision_flops_per_token(shape: ModelShape, layout: Layout, row_tokens: int, recomputed: float,
                                   grouped_extra: float) -> float:
    """The FLOPs a Megatron low precision runs faster: the decoder blocks' GEMMs (Transformer Engine's linear layers
    and grouped experts), in every pass; attention scores, the embedding and the output head stay in BF16.
    `recomputed` and `grouped_extra`: the layout's recomputed and grouped-GEMM FLOPs per token, as the step counts
    them."""
    if layout.recompute == "full":
        recomputed -= shape.attention_flops_per_token(row_tokens) / 3
    return 3 * 2 * shape.block_matmul_params + recomputed + grouped_extra


def step_times(shape: ModelShape, layouts: Sequence[Layout], links: Links, peak_flops: float, calibration: Calibration,
               global_batch: int, row_tokens: int, balanced_routing: bool = False) -> list[StepTime]:
    """The step of each of a group of layouts alike but for the optimizer fraction offloaded (an enumerated group):
    the fraction changes the host update only, so the rest is worked out once."""
    layout = layouts[0]
    microbatches = layout.microbatches(global_batch)
    mean_rows = global_batch / layout.dp / microbatches  # the last microbatch may be short
    layers = max(layout.stage_layers)  # on the heaviest stage
    imbalance = layers * layout.pp / shape.layers
    recomputed = _recomputed_flops_per_token(shape, layout, row_tokens)
    grouped_extra = _grouped_gemm_extra_flops(shape, layout, calibration, balanced_routing)
    flops_per_token = shape.step_flops_per_token(row_tokens) + recomputed + grouped_extra
    if layout.low_precision is not None:  # those GEMMs' FLOPs take 1/speed-up of their BF16 time
        speedup = calibration.low_precision_speedup[LOW_PRECISIONS[layout.low_precision]]
        flops_per_token -= _low_precision_flops_per_token(shape, layout, row_tokens, recomputed, grouped_extra) * (
            1 - 1 / speedup)
    rules = layout.rules
    if rules.ring_attention and layout.cp > 1:
        # Ring attention's score FLOPs at cp_attention_efficiency: counted as that many more FLOPs at the efficiency.
        flops_per_token += shape.attention_flops_per_token(row_tokens) * (1 / calibration.cp_attention_efficiency - 1)
    flops = mean_rows * row_tokens * flops_per_token * imbalance / (layout.tp * layout.cp * layout.pp)
    efficiency = variant_efficiency(calibration, layout.engine, links.variant, links.catalog_root)
    if rules.compiles and layout.compile:
        efficiency *= calibration.compile_speedup
    seconds = flops / (peak_flops * efficiency)
    if layout.recompute == "selective" and rules.selective_saved_matmul_fraction is None:
        seconds *= calibration.selective_recompute_time_factor[layout.engine]
    norm_s = 0.0
    if amp_composite_norms(layout):
        normalized = mean_rows * row_tokens * layers * shape.norm_width / layout.tp
        norm_s = normalized * calibration.amp_composite_norm_s_per_element \
            * COMPOSITE_NORM_RECOMPUTE_FACTOR[layout.recompute]
    levers = time_effect(layout, links.gpu_type)
    heaviest = _heaviest_stage_params(shape, layout)  # sets the FSDP gathers, the DP sync and the host update
    comm = microbatch_comm(shape, layout, links, calibration, heaviest,
                           _imbalance(shape, layout, calibration, balanced_routing), seconds)
    pipeline_slots = microbatches + (layout.pp - 1) / layout.vpp
    dp_s = dp_sync_s(layout, links, calibration, heaviest)
    overhead_s = calibration.microbatch_overhead_s_per_layer * layers if rules.host_overhead_per_microbatch else 0.0
    eager_sac = rules.selective_saved_matmul_fraction is not None and layout.recompute == "selective"
    host_s = calibration.eager_sac_overhead_s_per_layer * layers if eager_sac and not layout.compile else 0.0
    return [StepTime(
        microbatch_compute_s=seconds, microbatch_comm_s=dict(comm),  # each step its own dict
        pipeline_slots=pipeline_slots, microbatches=microbatches, dp_s=dp_s, microbatch_norm_s=norm_s,
        offload_s=_offload_s(each, calibration, heaviest), microbatch_overhead_s=overhead_s, microbatch_host_s=host_s,
        lever_speedup=levers.speedup, unmeasured_levers=levers.unmeasured) for each in layouts]
