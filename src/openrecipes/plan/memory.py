"""Peak memory of one GPU, by part, on the pipeline stage that needs the most.

Which of these an engine uses its LayoutRules say (engines/<name>/layouts.py).
The distributed optimizer (Megatron; Korthikanti et al. 2022 for activations; Megatron-LM docs for the optimizer):
BF16 weights 2 B/param, gradient buffer 4 B/param (2 with --grad-reduce-in-bf16), FP32 master weights and Adam
moments 12 B/param sharded over the data-parallel ranks (DP*CP for dense parameters, the expert-data-parallel
ranks for expert parameters) and the offloaded fraction kept on the host.
Megatron-FSDP (--use-megatron-fsdp with --data-parallel-sharding-strategy optim_grads_params, Megatron-Core's
Megatron FSDP guide): BF16 weights 2 B/param, FP32 main weights 4 B, main gradients 4 B (2 with
--grad-reduce-in-bf16) and Adam moments 8 B, all sharded over DP*CP (experts over their expert-data-parallel ranks),
plus the unsharded BF16 weights of the layer computing and the one prefetched and the gradient of the layer being
reduce-scattered.
FSDP2 (torchtitan): FP32 sharded parameters, gradients and Adam moments (16 B/param over FSDP*CP), plus the
unsharded BF16 copies of the layers being gathered and the gradients being reduced (every layer's BF16 copy when
parameters are not resharded after the forward). With an FSDP degree of 1 torchtitan applies no FSDP and trains
under AMP ("Mixed precision training is handled by AMP" in runs/qwen3-1.7b-h200-*/train.log): eager autocast keeps
a BF16 copy of every matmul weight for the backward; a compiled block saves the FP32 weight (a graph input) and
recasts it in the backward, so compiled layers hold no copy.
Activations assume flash attention (no s^2 score tensor) and no dropout; with TP, sequence parallel divides
every saved tensor by TP.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache

from openrecipes.plan.constants import BF16_BYTES, FP32_BYTES, GIB
from openrecipes.plan.layouts import Layout
from openrecipes.plan.levers import FUSED_LINEAR_CROSS_ENTROPY, FUSED_RMSNORM, fused_cross_entropy_bytes
from openrecipes.plan.shape import ModelShape

DISTRIBUTED_OPTIMIZER_BYTES = 12  # FP32 master weights + Adam m + Adam v
FSDP_STATE_BYTES = 16  # FP32 parameter shard + FP32 gradient shard + Adam m + Adam v
ROUTER_BYTES_PER_EXPERT = 2 * FP32_BYTES  # FP32 router logits and probabilities
# Training under AMP without FSDP (torchtitan): FP32 norm weights meet BF16 inputs, so torch's RMSNorm cannot use its
# fused kernel ("Mismatch dtype between input and weight ... Cannot dispatch to fused implementation" in
# runs/sweep-qwen3-1.7b-h200x1/*-eager/train.log) and runs its FP32 composite, whose backward keeps the FP32 upcast
# input and the FP32 normalized tensor: 8 B per normalized element. Recompute drops them; a compiled block fuses the
# norm and keeps its BF16 input only (counted with the activations).
AMP_COMPOSITE_NORM_BYTES = 2 * FP32_BYTES
# Two gathered BF16 layers (the running one and the prefetched one) and one FP32 gradient being reduce-scattered.
FSDP_BUFFER_BYTES = 2 * BF16_BYTES + FP32_BYTES
MEGATRON_FSDP_WEIGHT_BYTES = BF16_BYTES + FP32_BYTES  # the BF16 weight shard and its FP32 main copy
ADAM_MOMENT_BYTES = 2 * FP32_BYTES


@dataclass(frozen=True)
class MemoryEstimate:
    parts: dict[str, float]  # bytes by part, in the order a reader adds them up
    stage: int  # the pipeline stage these parts belong to
    total_bytes: float  # sum(parts.values())

    @property
    def total_gib(self) -> float:
        return self.total_bytes / GIB

    def parts_gib(self) -> dict[str, float]:
        return {name: round(value / GIB, 2) for name, value in self.parts.items()}


def logits_bytes(tokens: int, vocab: int, tp: int = 1, bytes_per_logit: float = FP32_BYTES) -> float:
    """The logits one GPU holds: tokens x vocabulary / TP x bytes each. The seeds' figure, in FP32: 8,192 tokens x
    201,088 vocabulary x 4 B = 6.14 GiB on one GPU."""
    return tokens * vocab / tp * bytes_per_logit


def _stage_layer_kinds(dense_layers: int, stage_layers: tuple[int, ...]) -> tuple[tuple[int, int], ...]:
    """(dense-FFN layers, MoE layers) on each stage; the dense layers come first in the model."""
    kinds, start = [], 0
    for count in stage_layers:
        dense = max(0, min(start + count, dense_layers) - start)
        kinds.append((dense, count - dense))
        start += count
    return tuple(kinds)


def stage_params_per_gpu(shape: ModelShape, layout: Layout) -> tuple[tuple[float, float], ...]:
    """(non-expert, expert) parameters one GPU of each pipeline stage holds."""
    return _stage_params(shape, layout.stage_layers, layout.pp, layout.tp, layout.ep, layout.etp)


@cache  # keyed on the few layout fields the counts depend on: shared by every layout of a request that has them
def _stage_params(shape: ModelShape, stage_layers: tuple[int, ...], pp: int, tp: int, ep: int,
                  etp: int) -> tuple[tuple[float, float], ...]:
    per_stage = []
    for stage, (dense_layers, moe_layers) in enumerate(_stage_layer_kinds(shape.dense_layers, stage_layers)[:pp]):
        first, last = stage == 0, stage == pp - 1
        embeddings = (first + (last and (shape.untied_embeddings or pp > 1))) * shape.embedding_params
        non_expert = ((dense_layers + moe_layers) * shape.attention_params_per_layer
                      + dense_layers * shape.dense_mlp_params + moe_layers * shape.moe_nonexpert_params
                      + embeddings) / tp
        expert = moe_layers * shape.experts * shape.expert_params / (ep * etp)
        per_stage.append((non_expert, expert))
    return tuple(per_stage)


@cache  # the same few (TP, ETP) pairs for all of a request's layouts
def _layer_activation_bytes_per_token(shape: ModelShape, tp: int, etp: int, moe: bool) -> tuple[float, float]:
    """(kept under selective recompute, dropped by it) bytes per token of one layer, per GPU."""
    h = shape.hidden
    norm_inputs = 2 * BF16_BYTES * h  # residual stream entering each of the two norms
    norm_outputs = 2 * BF16_BYTES * h  # inputs of the QKV projection and of the FFN/router
    attention = BF16_BYTES * (shape.attention_qkv_width + shape.attention_out_width + shape.attention_latent_width)
    if moe:
        routed = shape.router_topk * etp * (2 * BF16_BYTES * h + 2 * BF16_BYTES * shape.expert_ffn / etp)
        shared = shape.shared_experts * 2 * BF16_BYTES * shape.expert_ffn
        activation_out = (shape.router_topk + shape.shared_experts) * BF16_BYTES * shape.expert_ffn
        kept = norm_inputs + attention + routed + shared + ROUTER_BYTES_PER_EXPERT * shape.experts
    else:
        dense_ffn = shape.dense_ffn or 0  # a model whose every layer is MoE has no dense FFN
        kept = norm_inputs + attention + 2 * BF16_BYTES * dense_ffn
        activation_out = BF16_BYTES * dense_ffn
    return kept / tp, (norm_outputs + activation_out) / tp


def amp_composite_norms(layout: Layout) -> bool:
    """Eager AMP with an FSDP degree of 1 (FP32 norm weights): the norms run their FP32 composite."""
    return layout.rules.amp_without_fsdp and layout.dp * layout.cp == 1 and not layout.levers.compile


@cache  # the same few (TP, ETP) pairs for all of a request's layouts
def _op_level_sac_bytes_per_token(shape: ModelShape, tp: int, etp: int, moe: bool, saved_fraction: float) -> float:
    h = shape.hidden
    attention_matmuls = shape.attention_qkv_width + shape.attention_latent_width + h
    if moe:
        routed_and_shared = shape.router_topk * etp + shape.shared_experts
        ffn_matmuls = shape.experts + routed_and_shared * (2 * shape.expert_ffn + h)
    else:
        ffn_matmuls = 2 * (shape.dense_ffn or 0) + h
    saved = saved_fraction * (attention_matmuls + ffn_matmuls) + h + shape.attention_out_width
    return BF16_BYTES * saved / tp


@cache  # a request's thousands of layouts share a few stage splits
def _stage_layer_counts(dense_layers: int, stage_layers: tuple[int, ...]) -> tuple[tuple[tuple[bool, int], ...], ...]:
    """Each stage's (MoE, layers) pairs, dense first, without a kind the stage has no layer of."""
    return tuple(tuple((moe, count) for moe, count in ((False, dense), (True, moe_layers)) if count)
                 for dense, moe_layers in _stage_layer_kinds(dense_layers, stage_layers))


def _kept_bytes_per_token(shape: ModelShape, layout: Layout, per_layer: dict[bool, tuple[float, float]]
                          ) -> dict[bool, float]:
    """Bytes per token one layer of each kind keeps under a recompute policy other than full, per GPU."""
    if layout.recompute == "none":
        composite = amp_composite_norms(layout) and FUSED_RMSNORM not in layout.levers.kernels
        norms = AMP_COMPOSITE_NORM_BYTES * shape.norm_width / layout.tp if composite else 0.0
        return {moe: sum(per_layer[moe]) + norms for moe in per_layer}
    if (saved_fraction := layout.rules.selective_saved_matmul_fraction) is not None:
        return {moe: _op_level_sac_bytes_per_token(shape, layout.tp, layout.etp, moe, saved_fraction)
                for moe in per_layer}
    return {moe: per_layer[moe][0] for moe in per_layer}


def _activation_bytes(shape: ModelShape, layout: Layout, global_batch: int) -> list[float]:
    """Activation bytes on one GPU of each pipeline stage; what is per layer is worked out once for all stages."""
    tokens = layout.max_tokens_per_gpu
    per_layer = {moe: _layer_activation_bytes_per_token(shape, layout.tp, layout.etp, moe)
                 for moe, layers in ((False, shape.dense_layers), (True, shape.moe_layers)) if layers}
    kept = _kept_bytes_per_token(shape, layout, per_layer) if layout.recompute != "full" else {}
    microbatches, pp, interleaved = layout.microbatches(global_batch), layout.pp, layout.vpp > 1
    # The interleaved schedule warms up more chunks (Korthikanti et al., section 4.2).
    warmup = 1 + (pp - 1) / (pp * layout.vpp)
    per_stage = []
    for stage, counts in enumerate(_stage_layer_counts(shape.dense_layers, layout.stage_layers)[:pp]):
        in_flight: float = min(microbatches, pp - stage)
        if interleaved:
            in_flight *= warmup
        if layout.recompute == "full":
            layer_inputs = sum(count for _, count in counts) * BF16_BYTES * shape.hidden * tokens / layout.tp
            per_stage.append(in_flight * layer_inputs + max(sum(per_layer[moe]) * tokens for moe, _ in counts))
        else:
            per_stage.append(in_flight * tokens * sum(count * kept[moe] for moe, count in counts))
    return per_stage


def _largest_fsdp_unit(shape: ModelShape, layout: Layout) -> float:
    """Parameters of the largest unit FSDP gathers at once on one GPU: a decoder layer or the embedding."""
    ffn = (shape.experts * shape.expert_params / (layout.ep * layout.etp) + shape.moe_nonexpert_params / layout.tp
           if shape.is_moe else shape.dense_mlp_params / layout.tp)
    return max(shape.attention_params_per_layer / layout.tp + ffn, shape.embedding_params / layout.tp)


def _fsdp_gathered(shape: ModelShape, layout: Layout, stage: int, non_expert: float, expert: float) -> dict[str, float]:
    """The unsharded BF16 weights one GPU holds besides its FP32 shards: FSDP's gathered layers, or AMP's copies."""
    if layout.dp * layout.cp == 1:
        if layout.levers.compile:
            return {"amp_weight_copies": 0.0}
        # The input embedding is a lookup, not a matmul: autocast does not cast it (a tied matrix is cast as the
        # output).
        lookup_only = shape.embedding_params / layout.tp if stage == 0 and shape.untied_embeddings else 0.0
        return {"amp_weight_copies": (non_expert + expert - lookup_only) * BF16_BYTES}
    if not layout.levers.reshard_after_forward:
        # Every layer's gathered BF16 weights stay from its forward to its backward, plus one FP32 gradient unit.
        return {"fsdp_buffers": (non_expert + expert) * BF16_BYTES + _largest_fsdp_unit(shape, layout) * FP32_BYTES}
    return {"fsdp_buffers": _largest_fsdp_unit(shape, layout) * FSDP_BUFFER_BYTES}


def _fsdp_states(shape: ModelShape, layout: Layout, stage: int, non_expert: float, expert: float) -> dict[str, float]:
    """FSDP's FP32 shards and Adam states, and the unsharded weights it gathers (which depend on more of the layout
    than the distributed optimizer's states, so they are worked out per layout and stage)."""
    sharded = non_expert / (layout.dp * layout.cp) + expert / layout.expert_data_parallel
    return {"weights": sharded * FP32_BYTES, "gradients": sharded * FP32_BYTES,
            "optimizer_states": sharded * (FSDP_STATE_BYTES - 2 * FP32_BYTES),
            **_fsdp_gathered(shape, layout, stage, non_expert, expert)}


def _megatron_fsdp_states(shape: ModelShape, layout: Layout, non_expert: float, expert: float) -> dict[str, float]:
    """Megatron-FSDP's shards of every state, and the layers it holds gathered."""
    sharded = non_expert / (layout.dp * layout.cp) + expert / layout.expert_data_parallel
    grad_bytes = BF16_BYTES if layout.levers.grad_reduce_bf16 else FP32_BYTES
    return {"weights": sharded * MEGATRON_FSDP_WEIGHT_BYTES, "gradients": sharded * grad_bytes,
            "optimizer_states": sharded * ADAM_MOMENT_BYTES * (1 - layout.levers.offload_fraction),
            "fsdp_buffers": _largest_fsdp_unit(shape, layout) * (2 * BF16_BYTES + grad_bytes)}


def _logits_part(shape: ModelShape, layout: Layout) -> float:
    if FUSED_LINEAR_CROSS_ENTROPY in layout.levers.kernels:
        return fused_cross_entropy_bytes(layout.max_tokens_per_gpu, shape.vocab, shape.hidden, layout.tp)
    rules = layout.rules
    per_logit = rules.compiled_logits_bytes if layout.levers.compile else rules.logits_bytes
    return logits_bytes(layout.max_tokens_per_gpu, shape.vocab, layout.tp, per_logit)


def memories_in_order(shape: ModelShape, layouts: Sequence[Layout], global_batch: int,
                      runtime_reserve_gib: float) -> Iterator[MemoryEstimate]:
    """The peak of each of a group of layouts alike but for the optimizer fraction offloaded (an enumerated group),
    one at a time, so a caller that stops early (at the first fraction that fits) works out no more: the fraction
    changes the optimizer states only, so the activations and logits are worked out once."""
    first = layouts[0]
    activations = _activation_bytes(shape, first, global_batch)
    logits = _logits_part(shape, first)
    params = stage_params_per_gpu(shape, first)
    for layout in layouts:
        yield _peak_stage(shape, layout, params, activations, logits, runtime_reserve_gib)


def _peak_stage(shape: ModelShape, layout: Layout, params: tuple[tuple[float, float], ...], activations: list[float],
                logits: float, runtime_reserve_gib: float) -> MemoryEstimate:
    """The stage with the largest total (the first of equals). Each stage's states and their sum are worked out once
    per distinct sharding (a request's layouts share a few), and the parts dict is built for the peak stage only;
    every total adds its parts in the dict's order, so it equals sum(parts.values()) bit for bit."""
    reserve = runtime_reserve_gib * GIB
    last = layout.pp - 1
    peak, peak_total, peak_states = 0, -1.0, {}
    fsdp = layout.rules.fsdp
    levers = layout.levers
    sharding = (layout.dp * layout.cp, layout.expert_data_parallel, levers.grad_reduce_bf16, levers.offload_fraction)
    for stage, (non_expert, expert) in enumerate(params):
        if fsdp:
            states = _fsdp_states(shape, layout, stage, non_expert, expert)
            states_sum = sum(states.values())
        elif layout.levers.megatron_fsdp:
            states = _megatron_fsdp_states(shape, layout, non_expert, expert)
            states_sum = sum(states.values())
        else:
            states, states_sum = _sharded_states(*sharding, non_expert, expert)
        total = states_sum + activations[stage] + (logits if stage == last else 0.0) + reserve
        if total > peak_total:
            peak, peak_total, peak_states = stage, total, states
    parts = {**peak_states, "activations": activations[peak], "logits": logits if peak == last else 0.0,
             "runtime_reserve": reserve}
    return MemoryEstimate(parts, peak, sum(parts.values()))


# The distributed optimizer's states depend on these alone: a request's thousands of layouts share a few thousand
# (bounded, so a process planning many requests does not keep them all).
@lru_cache(maxsize=2**16)
def _sharded_states(dense_shards: int, expert_shards: int, grad_reduce_bf16: bool, offload_fraction: float,
                    non_expert: float, expert: float) -> tuple[dict[str, float], float]:
    sharded = non_expert / dense_shards + expert / expert_shards
    grad_bytes = BF16_BYTES if grad_reduce_bf16 else FP32_BYTES
    states = {"weights": (non_expert + expert) * BF16_BYTES, "gradients": (non_expert + expert) * grad_bytes,
              "optimizer_states": sharded * DISTRIBUTED_OPTIMIZER_BYTES * (1 - offload_fraction)}
    return states, sum(states.values())
