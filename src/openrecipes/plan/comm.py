"""Communication on the topology: what each collective of a step costs, and what of it the step pays.

A collective costs latency + bytes / bandwidth on the level it crosses: the NVLink (or xGMI) domain of the part's
`scale_up` block in hardware/gpus.yaml while its group sits inside one domain, else the fabric of its `scale_out`
block, whose per-GPU bandwidth then bounds the ring (NCCL's inter-node rings run at the network's speed).

Bytes each rank moves, as a share of the collective's buffer (nccl-tests, doc/PERFORMANCE.md, "bus bandwidth"):
all-reduce 2(n-1)/n; all-gather and reduce-scatter (n-1)/n of the gathered buffer; all-to-all (n-1)/n of what a rank
sends; a point-to-point send its message.

Latency (NCCL's own cost model, src/graph/tuning.cc, ncclTopoTuneModel, Simple protocol): a ring pays a base latency
and one step latency per step, (n-1) steps for all-gather and reduce-scatter and 2(n-1) for all-reduce, the steps that
cross from one domain to the next (nodes-1, or 2(nodes-1)) at the fabric's step latency and the rest at NVLink's. NCCL's
tree (all-reduce only) pays 2((ranks per domain - 1) NVLink steps + log2(domains) fabric steps) and reaches 0.9 of the
ring's bus bandwidth (its `busBw * .9`); NCCL runs whichever of the two is faster for the message, and so does the
planner: the ring for large messages in small groups, the tree once a group's ring latency outweighs the tree's lost
bandwidth. An all-to-all sends 1/n of a rank's data to each peer, all at once (NCCL groups the sends and receives
into one operation): the peers inside the domain over NVLink and the rest over the fabric, in parallel, with one
step's latency of the farthest level.

The constants: `collective_base_latency_s`, `nvlink_step_latency_s` and `network_step_latency_s` in calibration.yaml,
their priors NCCL's (8.4, 3.4 and 9.6 microseconds); the bus efficiencies of each level (`nvlink_bus_efficiency`,
`network_bus_efficiency`), or a probe's measured bandwidth inside the domain.

What the step pays of each collective (`microbatch_comm`, `dp_sync_s`) is its exposed remainder: the share of
`exposed_communication` not hidden behind compute, and for fully sharded data parallel (the engine's LayoutRules
`fsdp`, or a Megatron-FSDP layout), whose prefetch gathers the next layer while one computes, what outlasts the
compute it overlaps with.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from openrecipes.plan.constants import BF16_BYTES, FP32_BYTES, Calibration, Links
from openrecipes.plan.layouts import Layout
from openrecipes.plan.shape import ModelShape

PASSES = {"none": 2, "selective": 2, "full": 3}  # forward, [recomputed forward], backward: collectives per layer
# NCCL's tree reaches this share of the ring's bus bandwidth (tuning.cc: busBw * .9)
TREE_BANDWIDTH_SHARE = 0.9
# Megatron's gradient buckets: max(40M, 1M x DP) parameters each (megatron/core/distributed,
# DistributedDataParallelConfig.bucket_size: "larger DP sizes need larger buckets to ensure collectives do not become
# latency-bound")
BUCKET_MIN_PARAMS = 40_000_000
BUCKET_PARAMS_PER_RANK = 1_000_000


@dataclass(frozen=True)
class Span:
    """How a communication group lies on the topology: its ranks, and how many of them share one NVLink domain."""

    ranks: int
    per_domain: int

    @property
    def domains(self) -> int:
        return math.ceil(self.ranks / self.per_domain)


def span(ranks: int, stride: int, links: Links) -> Span:
    """A group of `ranks` ranks `stride` apart (TP: 1; CP: TP; DP: TP x CP ...): the ranks one domain holds."""
    return Span(ranks, max(1, min(ranks, links.gpus_per_nvlink_domain // stride)))


def nvlink_bytes_per_s(links: Links, calibration: Calibration) -> float:
    """What a collective reaches inside the domain: measured by a probe of the part, else the datasheet's link at the
    assumed bus efficiency."""
    return links.measured_nvlink_bytes_per_s or links.nvlink_bytes_per_s * calibration.nvlink_bus_efficiency


def network_bytes_per_s(links: Links, calibration: Calibration) -> float:
    return links.network_bytes_per_s * calibration.network_bus_efficiency


def _bus_bytes_per_s(group: Span, links: Links, calibration: Calibration) -> float:
    if group.domains > 1:
        return network_bytes_per_s(links, calibration)
    return nvlink_bytes_per_s(links, calibration)


def _ring_latency_s(steps: int, crossing_steps: int, calibration: Calibration) -> float:
    return (calibration.collective_base_latency_s + (steps - crossing_steps) * calibration.nvlink_step_latency_s
            + crossing_steps * calibration.network_step_latency_s)


def all_reduce_s(buffer_bytes: float, group: Span, links: Links, calibration: Calibration) -> float:
    """Ring or tree, whichever is faster (NCCL's choice)."""
    n = group.ranks
    if n == 1 or buffer_bytes <= 0:
        return 0.0
    bandwidth = _bus_bytes_per_s(group, links, calibration)
    ring = (_ring_latency_s(2 * (n - 1), 2 * (group.domains - 1), calibration)
            + 2 * (n - 1) / n * buffer_bytes / bandwidth)
    tree = (calibration.collective_base_latency_s
            + 2 * ((group.per_domain - 1) * calibration.nvlink_step_latency_s
                   + math.log2(group.domains) * calibration.network_step_latency_s)
            + 2 * buffer_bytes / (TREE_BANDWIDTH_SHARE * bandwidth))
    return min(ring, tree)


def all_gather_s(buffer_bytes: float, group: Span, links: Links, calibration: Calibration) -> float:
    """The ring (NCCL's only all-gather in this model); `buffer_bytes` is the gathered buffer. A reduce-scatter of
    the same buffer moves the same bytes in the same steps (`reduce_scatter_s`)."""
    n = group.ranks
    if n == 1 or buffer_bytes <= 0:
        return 0.0
    return (_ring_latency_s(n - 1, group.domains - 1, calibration)
            + (n - 1) / n * buffer_bytes / _bus_bytes_per_s(group, links, calibration))


reduce_scatter_s = all_gather_s


def all_to_all_s(sent_bytes: float, group: Span, links: Links, calibration: Calibration) -> float:
    """A rank sends each peer 1/n of `sent_bytes`: the peers in its domain over NVLink and the others over the
    fabric at once. The sends to every peer are posted together (NCCL runs an all-to-all as one group of sends and
    receives), so it waits one step's latency of the farthest level it crosses, not one per peer."""
    n = group.ranks
    if n == 1 or sent_bytes <= 0:
        return 0.0
    local_peers = group.per_domain - 1
    remote_peers = n - 1 - local_peers
    local = local_peers * sent_bytes / n / nvlink_bytes_per_s(links, calibration)
    remote = remote_peers * sent_bytes / n / network_bytes_per_s(links, calibration)
    step = calibration.network_step_latency_s if remote_peers else calibration.nvlink_step_latency_s
    return calibration.collective_base_latency_s + step + max(local, remote)


def send_s(message_bytes: float, crosses_domain: bool, links: Links, calibration: Calibration) -> float:
    """One point-to-point message (a pipeline send): one step's latency and its bytes over the level it crosses."""
    if crosses_domain:
        return (calibration.collective_base_latency_s + calibration.network_step_latency_s
                + message_bytes / network_bytes_per_s(links, calibration))
    return (calibration.collective_base_latency_s + calibration.nvlink_step_latency_s
            + message_bytes / nvlink_bytes_per_s(links, calibration))


def microbatch_comm(shape: ModelShape, layout: Layout, links: Links, calibration: Calibration,
                    heaviest: tuple[float, float], imbalance: float, compute_s: float) -> dict[str, float]:
    """Exposed seconds per microbatch by kind (tp, cp, ep, pp, fsdp) on the heaviest stage. `heaviest`: its
    (non-expert, expert) parameters per GPU; `imbalance`: the busiest EP rank's share of routed tokens over the
    mean's; `compute_s`: the microbatch's compute, which FSDP's prefetch hides its gathers behind."""
    tokens, h = layout.max_tokens_per_gpu, shape.hidden
    layers = max(layout.stage_layers)
    moe_layers = round(layers * shape.moe_layers / shape.layers)
    passes = PASSES[layout.recompute]
    exposed = calibration.exposed_communication
    comm = {}
    if layout.tp > 1:
        # Sequence parallel: an all-gather before and a reduce-scatter after each TP block, per pass, of the
        # microbatch's activations. MoE blocks with ETP 1 dispatch the sequence shard directly, so only attention
        # (and dense/ETP FFNs) pay it.
        tp_blocks = layers + (layers - moe_layers) + (moe_layers if layout.etp > 1 else 0)
        one = all_gather_s(tokens * h * BF16_BYTES, span(layout.tp, 1, links), links, calibration)
        comm["tp"] = exposed["tp"] * 2 * tp_blocks * passes * one
    if layout.cp > 1:
        # Ring exchange of each layer's keys and values: CP-1 steps, each passing this rank's chunk to the next.
        kv_width = (shape.attention_qkv_width - shape.attention_out_width) / layout.tp
        crosses = layout.tp * layout.cp > links.gpus_per_nvlink_domain
        one = send_s(tokens * kv_width * BF16_BYTES, crosses, links, calibration)
        comm["cp"] = exposed["cp"] * layers * passes * (layout.cp - 1) * one
    if layout.ep > 1 and moe_layers:
        # Dispatch and combine per pass, each sending every routed copy of this GPU's tokens; the busiest rank
        # receives its share of the uneven spread.
        sent = tokens / layout.tp * layout.etp * shape.router_topk * h * BF16_BYTES * imbalance
        one = all_to_all_s(sent, span(layout.ep, layout.etp, links), links, calibration)
        comm["ep"] = exposed["ep"] * 2 * moe_layers * passes * one
    if layout.pp > 1:
        # Activations forward and gradients backward, once per virtual stage. Adjacent stages sit TP*CP*DP ranks
        # apart: on another domain once that reaches a whole domain.
        crosses = layout.tp * layout.cp * layout.dp >= links.gpus_per_nvlink_domain
        comm["pp"] = exposed["pp"] * 2 * layout.vpp * send_s(tokens / layout.tp * h * BF16_BYTES, crosses, links,
                                                             calibration)
    if layout.sharded_data_parallel:
        comm["fsdp"] = _fsdp_exposed_s(layout, links, calibration, heaviest, layers, compute_s)
    return comm


def _fsdp_exposed_s(layout: Layout, links: Links, calibration: Calibration, heaviest: tuple[float, float],
                    layers: int, compute_s: float) -> float:
    """Fully sharded data parallel (torchtitan's FSDP2, Megatron-FSDP): per layer and microbatch, an all-gather of
    its BF16 weights for the forward, another for the backward where it resharded them after the forward, and a
    reduce-scatter of its gradients (FP32, or BF16 with --grad-reduce-in-bf16). Each layer's collectives prefetch
    while the layer before computes, so a layer pays only what outlasts its own compute, and the first gather is
    waited for (the `exposed_communication.fsdp` share of the traffic is the least a step pays: the collectives
    share the GPU's memory bandwidth and SMs with the compute they hide behind)."""
    non_expert, expert = heaviest
    gathers = 2 if layout.levers.reshard_after_forward else 1
    grad_bytes = BF16_BYTES if layout.levers.grad_reduce_bf16 else FP32_BYTES
    dense = span(layout.dp * layout.cp, layout.tp, links)
    experts = span(layout.expert_data_parallel, layout.ep * layout.etp, links)
    per_layer_gather = (all_gather_s(non_expert / layers * BF16_BYTES, dense, links, calibration)
                        + all_gather_s(expert / layers * BF16_BYTES, experts, links, calibration))
    per_layer_reduce = (reduce_scatter_s(non_expert / layers * grad_bytes, dense, links, calibration)
                        + reduce_scatter_s(expert / layers * grad_bytes, experts, links, calibration))
    per_layer = gathers * per_layer_gather + per_layer_reduce
    outlasting = layers * max(0.0, per_layer - compute_s / layers) + per_layer_gather
    return max(outlasting, calibration.exposed_communication["fsdp"] * layers * per_layer)


def dp_sync_s(layout: Layout, links: Links, calibration: Calibration, heaviest: tuple[float, float]) -> float:
    """The distributed optimizer (Megatron): reduce-scatter the gradients and all-gather the updated BF16 weights, in
    buckets of max(40M, 1M x DP) parameters, each bucket a collective with its own latency; the step pays the
    `exposed_communication.dp` share of them (Megatron overlaps the rest with the backward and the next forward).
    Fully sharded data parallel syncs every microbatch instead (`microbatch_comm`)."""
    if layout.sharded_data_parallel:
        return 0.0
    non_expert, expert = heaviest
    grad_bytes = BF16_BYTES if layout.levers.grad_reduce_bf16 else FP32_BYTES
    total = 0.0
    for params, group in ((non_expert, span(layout.dp * layout.cp, layout.tp, links)),
                          (expert, span(layout.expert_data_parallel, layout.ep * layout.etp, links))):
        if params <= 0 or group.ranks == 1:
            continue
        buckets = math.ceil(params / max(BUCKET_MIN_PARAMS, BUCKET_PARAMS_PER_RANK * group.ranks))
        one = params / buckets
        total += buckets * (reduce_scatter_s(one * grad_bytes, group, links, calibration)
                            + all_gather_s(one * BF16_BYTES, group, links, calibration))
    return calibration.exposed_communication["dp"] * total
