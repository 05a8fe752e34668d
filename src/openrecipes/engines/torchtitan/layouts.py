"""How torchtitan 0.2.2 places a model, in the terms of the planner's core (plan/).

FSDP2 over DP (and CP): FP32 sharded parameters, gradients and Adam moments, BF16 copies of the layers being
gathered; with an FSDP degree of 1 it applies no FSDP and trains under AMP ("Mixed precision training is handled
by AMP" in runs/qwen3-1.7b-h200-*/train.log). EP borrows from the FSDP*CP ranks; no optimizer offload. Its
selective (op) activation checkpointing saves every other matmul output of a layer and the attention output and
recomputes the rest (torchtitan's _save_list policy). CP runs ring attention; --compile.enable compiles each block
and the loss. Host work: a cost per layer per microbatch, and in eager runs the selective-AC policy's.
"""

from __future__ import annotations

from openrecipes.engines.knowledge import LayoutRules

RULES = LayoutRules(
    offload_fractions=(0.0,), fsdp=True, experts_within_fsdp=True,
    # The unfused loss: the BF16 output, the FP32 log-softmax it saves, and in its backward the FP32 gradients of
    # the log-softmax output and input at once.
    logits_bytes=2 + 3 * 4,
    # Compiled ("Compiling the loss function with torch.compile"): the fused cross-entropy keeps the BF16 logits and
    # one FP32 tensor, as Megatron's does.
    compiled_logits_bytes=2 + 4,
    selective_saved_matmul_fraction=0.5, amp_without_fsdp=True, host_overhead_per_microbatch=True,
    ring_attention=True,
    # No torchtitan run measures an interleaved schedule, and the step model counts no cost per virtual stage, so
    # deeper interleaving would rank first on the bubble alone: 2 and 4, as torchtitan's docs show.
    max_virtual_stages=4,
)
