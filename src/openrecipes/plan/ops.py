"""One microbatch of a layout as operators on one GPU of its heaviest pipeline stage: GEMMs with their shapes,
causal attention, and memory-bound work as bytes of HBM traffic. openrecipes.plan.compute times them.

Shapes are per GPU after the layout's splits: a GEMM's M is the tokens it multiplies (the CP shard of the
microbatch's rows; sequence parallel gathers the TP group's tokens for the GEMM), column-parallel weights (QKV, MLP
gate and up) split N over TP, row-parallel ones (the attention output, MLP down) split K; routed experts are grouped
GEMMs of the tokens each local expert receives (E/EP experts a GPU, ETP splitting their FFN). A GEMM's FLOPs are
2·M·N·K a pass; training runs it three times (forward, the input's gradient, the weight's gradient: the same FLOPs
each, Megatron-LM's and PaLM's 6N), and a recompute policy adds the forward it reruns. The output head and the loss
are spread over the stages as the layers are (the planner's stage split is even in FLOPs).

Memory-bound work (module constants, bytes per element in forward and backward together, BF16 activations):
norms, the gated activation, rotary embedding, residual adds, MoE token permutation, the cross-entropy over the
vocabulary, and once a step the optimizer update. A low precision also casts each GEMM's operands (CAST_BYTES).
"""

from __future__ import annotations

from dataclasses import dataclass

from openrecipes.plan.layouts import Layout
from openrecipes.plan.shape import ModelShape

# Bytes of HBM traffic per element, forward and backward together (BF16 = 2 bytes):
NORM_BYTES = 10  # RMSNorm: forward reads x, writes y; backward reads x and dy, writes dx
GATED_ACTIVATION_BYTES = 16  # SwiGLU per FFN element: forward reads gate and up, writes their product; backward
#                              reads the three, writes two gradients
ROTARY_BYTES = 8  # rotary embedding of q and k: read and write forward, again backward
RESIDUAL_BYTES = 12  # each residual add: reads two, writes one, forward and backward (two a layer)
PERMUTE_BYTES = 16  # MoE: each routed copy of a token's hidden state read and written at dispatch and at combine,
#                     forward and backward
CROSS_ENTROPY_BYTES = 16  # per logit: read BF16, write FP32, read for the log-sum-exp, write the BF16 gradient
# The optimizer step per parameter on its shard: Adam reads the FP32 weight, gradient and both moments and writes
# the weight and the moments (7 x 4 bytes).
OPTIMIZER_BYTES_PER_PARAM = 28
TRAINING_PASSES = 3  # forward, the input's gradient, the weight's gradient


@dataclass(frozen=True)
class Gemm:
    name: str
    m: float  # rows: the tokens it multiplies (tokens per expert for a grouped GEMM; a mean, so not whole)
    n: int
    k: int
    count: float  # how many run per microbatch on this GPU: layers x passes (x local experts for a grouped GEMM)
    low_precision: bool  # a block linear layer: runs in the layout's FP8/MXFP8/NVFP4 where it has one
    grouped: bool = False  # a routed expert of a grouped GEMM

    @property
    def flops(self) -> float:
        return 2.0 * self.m * self.n * self.k * self.count


@dataclass(frozen=True)
class Attention:
    flops: float  # causal QK^T and PV, every pass (figures.attention_flops_per_token), this GPU's heads and tokens
    seq: int  # the keys a query sees at most: the row, or the sliding window
    head_dim: int
    heads: int  # this GPU's heads (after TP)
    recomputed: float  # of `flops`, the share a recompute policy reruns


@dataclass(frozen=True)
class Ops:
    gemms: tuple[Gemm, ...]
    attention: Attention
    memory_bytes: dict[str, float]  # per microbatch, by kind (norms, activation, ...)

    @property
    def gemm_flops(self) -> float:
        return sum(g.flops for g in self.gemms)


def microbatch_tokens(layout: Layout, mean_rows: float, row_tokens: int) -> float:
    """Tokens one GPU's GEMMs multiply per microbatch: its rows over the CP shard of each."""
    return mean_rows * row_tokens / layout.cp


def rerun_passes(layout: Layout) -> float:
    """Forward passes of the block GEMMs a recompute policy reruns: full recompute reruns every one, torchtitan's
    op-level selective AC the share it did not save. (Megatron's selective recompute reruns elementwise work only:
    a time factor, calibration.yaml.)"""
    saved = layout.rules.selective_saved_matmul_fraction
    if layout.recompute == "full":
        return 1.0
    if layout.recompute == "selective" and saved is not None:
        return 1 - saved
    return 0.0


def routed_tokens_per_expert(shape: ModelShape, layout: Layout, tokens: float) -> float:
    """Tokens one local expert multiplies: this GPU's tokens (its sequence shard with ETP 1), times the copies each
    token sends, gathered from the EP ranks and spread over the experts."""
    local = tokens / (layout.tp if layout.etp == 1 else 1)
    return local * shape.router_topk * layout.ep / shape.experts


def layer_ops(shape: ModelShape, layout: Layout, tokens: float, row_tokens: int) -> Ops:
    """The operators of one microbatch of `tokens` (microbatch_tokens) on a GPU of the heaviest stage."""
    layers = max(layout.stage_layers)
    moe_layers = round(layers * shape.moe_layers / shape.layers)
    dense_layers = layers - moe_layers
    tp, m = layout.tp, tokens
    block = TRAINING_PASSES + rerun_passes(layout)
    head_share = layers / shape.layers  # the output head and the loss, spread as the layers are
    h = shape.hidden
    qkv_width = shape.attention_params_per_layer // h - shape.attention_out_width
    gemms = [Gemm("qkv", m, _split(qkv_width, tp), h, layers * block, True),
             Gemm("attention out", m, h, _split(shape.attention_out_width, tp), layers * block, True),
             Gemm("output head", m, _split(shape.vocab, tp), h, head_share * TRAINING_PASSES, False)]
    if dense_layers and shape.dense_ffn:
        gemms += [Gemm("mlp gate+up", m, _split(2 * shape.dense_ffn, tp), h, dense_layers * block, True),
                  Gemm("mlp down", m, h, _split(shape.dense_ffn, tp), dense_layers * block, True)]
    routed = 0.0
    if moe_layers:
        per_expert = routed_tokens_per_expert(shape, layout, tokens)
        routed = per_expert * shape.experts / layout.ep  # routed copies this GPU's experts multiply
        local = shape.experts / layout.ep * moe_layers * block
        gemms += [Gemm("router", m, shape.experts, h, moe_layers * block, False),
                  Gemm("experts gate+up", per_expert, _split(2 * shape.expert_ffn, layout.etp), h, local, True,
                       grouped=True),
                  Gemm("experts down", per_expert, h, _split(shape.expert_ffn, layout.etp), local, True, grouped=True)]
        if shape.shared_experts:
            shared = shape.shared_experts * shape.expert_ffn
            gemms += [Gemm("shared gate+up", m, _split(2 * shared, tp), h, moe_layers * block, True),
                      Gemm("shared down", m, h, _split(shared, tp), moe_layers * block, True)]
    rerun = {"full": 1 / 3}.get(layout.recompute, 0.0)  # full recompute reruns the attention forward too
    heads = max(1, shape.attention_heads // tp)
    per_token = shape.attention_flops_per_token(row_tokens) / shape.layers * layers / tp
    attention = Attention(tokens * per_token * (1 + rerun), min(row_tokens, shape.attention_window or row_tokens),
                          shape.attention_score_width // (2 * shape.attention_heads), heads, rerun / (1 + rerun))
    forward_again = 1 + rerun_passes(layout) / TRAINING_PASSES  # memory-bound forward reruns with the GEMMs
    shard = tokens / tp  # sequence parallel: elementwise work on the TP group's sequence shard
    q_and_k = shape.attention_out_width + (shape.attention_qkv_width - shape.attention_out_width) / 2
    ffn_elements = dense_layers * (shape.dense_ffn or 0) * tokens / tp + moe_layers * (
        routed * shape.expert_ffn / layout.etp + shape.shared_experts * shape.expert_ffn * tokens / tp)
    memory = {
        "norms": layers * shard * shape.norm_width * NORM_BYTES * forward_again,
        "activation": ffn_elements * GATED_ACTIVATION_BYTES * forward_again,
        "rotary": layers * tokens * q_and_k / tp * ROTARY_BYTES * forward_again,
        "residual": layers * shard * h * 2 * RESIDUAL_BYTES,
        "permutation": moe_layers * routed * h * PERMUTE_BYTES,
        "cross_entropy": head_share * tokens * shape.vocab / tp * CROSS_ENTROPY_BYTES,
    }
    return Ops(tuple(gemms), attention, {kind: value for kind, value in memory.items() if value})


def _split(width: int, ways: int) -> int:
    return max(1, width // ways)


def optimizer_bytes(sharded_params: float) -> float:
    """HBM traffic of one optimizer step over the parameters this GPU updates."""
    return sharded_params * OPTIMIZER_BYTES_PER_PARAM
