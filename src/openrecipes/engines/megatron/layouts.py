"""How Megatron-LM (as slime runs it) places a model, in the terms of the planner's core (plan/).

The distributed optimizer: BF16 weights and gradient buffers on every rank, FP32 master weights and Adam moments
sharded over the data-parallel ranks, a fraction of them optionally on the host. EP*ETP is carved out of the
TP*CP*DP ranks of a stage. Selective recompute reruns the elementwise work of attention (a time factor, no
matmuls). The loss keeps the BF16 logits and their FP32 upcast (the seeds' note).
"""

from __future__ import annotations

from openrecipes.engines.knowledge import LayoutRules

BF16_LOGIT_AND_FP32_UPCAST_BYTES = 2 + 4

RULES = LayoutRules(
    offload_fractions=(0.0, 0.5, 0.9, 1.0),  # none, half, the seeds' 0.9, all
    fsdp=False, experts_within_fsdp=False, logits_bytes=BF16_LOGIT_AND_FP32_UPCAST_BYTES,
    compiled_logits_bytes=BF16_LOGIT_AND_FP32_UPCAST_BYTES,  # the planner never compiles Megatron
    selective_saved_matmul_fraction=None, amp_without_fsdp=False, host_overhead_per_microbatch=False,
    ring_attention=False)
