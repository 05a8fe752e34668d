"""Step time of one layout: its operators' compute (openrecipes.plan.ops, timed by openrecipes.plan.compute, over a
fitted residual efficiency), exposed communication, pipeline bubble, data-parallel synchronisation, host-side costs,
the optimizer step and the host-side optimizer.

A step runs (microbatches + (PP-1)/VPP) pipeline slots of one microbatch: its compute and per-layer collectives
(TP, CP, EP, PP sends), or the host work the GPU waits for when that takes longer (eager selective AC), plus a
per-layer host cost; then the data-parallel gradient/parameter sync and the offloaded optimizer update.
Every collective moves bytes over NVLink when its group fits in one NVLink domain, else over the network.
Which mechanisms an engine has (FSDP or the distributed optimizer, op-level selective AC, host costs, ring
attention, torch.compile) its LayoutRules say (engines/<name>/layouts.py).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache

from openrecipes.plan.compute import Part, compute_time, hbm_bytes_per_s, measured
from openrecipes.plan.constants import BF16_BYTES, FP32_BYTES, Calibration, Links
from openrecipes.plan.layouts import Layout
from openrecipes.plan.levers import gemm_precision, time_effect
from openrecipes.plan.memory import amp_composite_norms, stage_params_per_gpu
from openrecipes.plan.ops import layer_ops, microbatch_tokens, optimizer_bytes
from openrecipes.plan.shape import ModelShape
from openrecipes.plan.variants import efficiency as variant_efficiency

PASSES = {"none": 2, "selective": 2, "full": 3}  # forward, [recomputed forward], backward
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


def _transfer_s(bytes_per_gpu: float, crosses_domain: bool, links: Links, calibration: Calibration) -> float:
    if crosses_domain:
        return bytes_per_gpu / (links.network_bytes_per_s * calibration.network_bus_efficiency)
    return bytes_per_gpu / _nvlink_bytes_per_s(links, calibration)


def _nvlink_bytes_per_s(links: Links, calibration: Calibration) -> float:
    """What a collective reaches inside the domain: measured by a probe of the part, else the datasheet's link at the
    assumed bus efficiency."""
    return links.measured_nvlink_bytes_per_s or links.nvlink_bytes_per_s * calibration.nvlink_bus_efficiency


def _collective_s(bytes_per_gpu: float, group_span: int, links: Links, calibration: Calibration) -> float:
    """A ring collective runs at its slowest link: the network once its group spans more than one domain.
    group_span: consecutive ranks the group covers (its size times its stride)."""
    return _transfer_s(bytes_per_gpu, group_span > links.gpus_per_nvlink_domain, links, calibration)


def _all_to_all_s(bytes_per_gpu: float, group_gpus: int, stride: int, links: Links, calibration: Calibration) -> float:
    """An all-to-all sends to every peer at once: peers in the domain over NVLink, the rest over the network."""
    peers = group_gpus - 1
    if peers == 0:
        return 0.0
    local_peers = min(group_gpus, max(1, links.gpus_per_nvlink_domain // stride)) - 1
    local = bytes_per_gpu * local_peers / peers / _nvlink_bytes_per_s(links, calibration)
    network = links.network_bytes_per_s * calibration.network_bus_efficiency
    remote = bytes_per_gpu * (peers - local_peers) / peers / network
    return max(local, remote)


def _microbatch_comm(shape: ModelShape, layout: Layout, links: Links, calibration: Calibration,
                     heaviest: tuple[float, float], balanced_routing: bool) -> dict[str, float]:
    tokens, h = layout.max_tokens_per_gpu, shape.hidden
    layers = max(layout.stage_layers)
    moe_layers = round(layers * shape.moe_layers / shape.layers)
    passes = PASSES[layout.recompute]
    exposed = calibration.exposed_communication
    comm = {}
    if layout.tp > 1:
        # Sequence parallel: an all-gather before and a reduce-scatter after each TP block, per pass. MoE blocks
        # with ETP 1 dispatch the sequence shard directly, so only attention (and dense/ETP FFNs) pay it.
        tp_blocks = layers + (layers - moe_layers) + (moe_layers if layout.etp > 1 else 0)
        volume = 2 * tp_blocks * passes * (layout.tp - 1) / layout.tp * tokens * h * BF16_BYTES
        comm["tp"] = exposed["tp"] * _collective_s(volume, layout.tp, links, calibration)
    if layout.cp > 1:
        kv_width = (shape.attention_qkv_width - shape.attention_out_width) / layout.tp
        volume = layers * passes * (layout.cp - 1) * tokens * kv_width * BF16_BYTES
        comm["cp"] = exposed["cp"] * _collective_s(volume, layout.tp * layout.cp, links, calibration)
    if layout.ep > 1 and moe_layers:
        # Dispatch and combine per pass, each sending every routed copy of this GPU's tokens.
        volume = 2 * moe_layers * passes * tokens / layout.tp * layout.etp * shape.router_topk * h * BF16_BYTES \
            * (layout.ep - 1) / layout.ep
        # the busiest rank receives its share of the uneven spread (_imbalance)
        volume *= _imbalance(shape, layout, calibration, balanced_routing)
        comm["ep"] = exposed["ep"] * _all_to_all_s(volume, layout.ep, layout.etp, links, calibration)
    if layout.pp > 1:
        volume = 2 * layout.vpp * tokens / layout.tp * h * BF16_BYTES  # activations forward, gradients backward
        # Adjacent stages sit TP*CP*DP ranks apart: on another node once that reaches a whole domain.
        stage_span = layout.tp * layout.cp * layout.dp
        comm["pp"] = exposed["pp"] * _transfer_s(volume, stage_span >= links.gpus_per_nvlink_domain, links, calibration)
    if layout.rules.fsdp:
        non_expert, expert = heaviest
        shards = layout.dp * layout.cp
        # FSDP gathers BF16 weights for the forward and, when it resharded them after the forward, again for the
        # backward, and reduce-scatters FP32 gradients, every microbatch.
        gathers = 2 if layout.reshard_after_forward else 1
        volume = (non_expert * _shard_fraction(shards) + expert * _shard_fraction(layout.expert_data_parallel)) \
            * (gathers * BF16_BYTES + FP32_BYTES)
        comm["fsdp"] = exposed["fsdp"] * _collective_s(volume, layout.tp * shards, links, calibration)
    return comm


def _shard_fraction(shards: int) -> float:
    return (shards - 1) / shards


def _heaviest_stage_params(shape: ModelShape, layout: Layout) -> tuple[float, float]:
    """(non-expert, expert) parameters per GPU on the stage holding the most: it sets the sync and update time."""
    return _heaviest(stage_params_per_gpu(shape, layout), layout.dp * layout.cp, layout.expert_data_parallel)


@cache  # a request's layouts share a few parameter splits and shard counts
def _heaviest(per_stage: tuple[tuple[float, float], ...], dense_shards: int, expert_shards: int) -> tuple[float, float]:
    return max(per_stage, key=lambda params: params[0] / dense_shards + params[1] / expert_shards)


def _dp_sync_s(layout: Layout, links: Links, calibration: Calibration, heaviest: tuple[float, float]) -> float:
    """The distributed optimizer: reduce-scatter the gradients, all-gather the updated BF16 weights (FSDP syncs
    every microbatch instead)."""
    if layout.rules.fsdp:
        return 0.0
    non_expert, expert = heaviest
    grad_bytes = BF16_BYTES if layout.grad_reduce_bf16 else FP32_BYTES
    volume = (non_expert * _shard_fraction(layout.dp * layout.cp)
              + expert * _shard_fraction(layout.expert_data_parallel)) \
        * (grad_bytes + BF16_BYTES)
    group = layout.tp * layout.cp * layout.dp
    return calibration.exposed_communication["dp"] * _collective_s(volume, group, links, calibration)


def _offload_s(layout: Layout, calibration: Calibration, heaviest: tuple[float, float]) -> float:
    if not layout.offload_fraction:
        return 0.0
    non_expert, expert = heaviest
    sharded = non_expert / (layout.dp * layout.cp) + expert / layout.expert_data_parallel
    return layout.offload_fraction * sharded / calibration.cpu_optimizer_params_per_s_per_gpu


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
               global_batch: int, row_tokens: int, balanced_routing: bool = False) -> list[StepTime]:
    """The step of each of a group of layouts alike but for the optimizer fraction offloaded (an enumerated group):
    the fraction changes the host update only, so the rest is worked out once. `part`: what compute reads of the
    part (openrecipes.plan.compute.part_of), read once a request."""
    layout = layouts[0]
    microbatches = layout.microbatches(global_batch)
    mean_rows = global_batch / layout.dp / microbatches  # the last microbatch may be short
    layers = max(layout.stage_layers)  # on the heaviest stage
    rules = layout.rules
    operators = layer_ops(shape, layout, microbatch_tokens(layout, mean_rows, row_tokens), row_tokens)
    precision = gemm_precision(layout, links.gpu_type)
    timed = compute_time(operators, part, precision, calibration, layout.engine,
                         _imbalance(shape, layout, calibration, balanced_routing))
    attention_s = timed.attention_s
    if rules.ring_attention and layout.cp > 1:  # ring attention's smaller kernels over CP chunks
        attention_s /= calibration.cp_attention_efficiency
    seconds = (timed.gemm_s + attention_s + sum(timed.memory_s.values())) \
        / variant_efficiency(calibration, layout.engine, links.variant, links.catalog_root)
    if rules.compiles and layout.compile:
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
    comm = _microbatch_comm(shape, layout, links, calibration, heaviest, balanced_routing)
    pipeline_slots = microbatches + (layout.pp - 1) / layout.vpp
    dp_s = _dp_sync_s(layout, links, calibration, heaviest)
    overhead_s = calibration.microbatch_overhead_s_per_layer * layers if rules.host_overhead_per_microbatch else 0.0
    eager_sac = rules.selective_saved_matmul_fraction is not None and layout.recompute == "selective"
    host_s = calibration.eager_sac_overhead_s_per_layer * layers if eager_sac and not layout.compile else 0.0
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
        * (1 - layout.offload_fraction)
    return optimizer_bytes(sharded) / hbm_bytes_per_s(part, calibration)
