"""Megatron-LM's levers beyond a layout's degrees (as slime and Megatron-Bridge pass them): optimizer CPU offload,
--grad-reduce-in-bf16, Transformer Engine's low-precision GEMMs and Megatron-FSDP."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MegatronLevers:
    offload_fraction: float = 0.0  # --optimizer-offload-fraction (with --optimizer-cpu-offload)
    grad_reduce_bf16: bool = False  # --grad-reduce-in-bf16: 2-byte instead of 4-byte gradient buffers
    low_precision: str | None = None  # Transformer Engine's GEMM precision (fp8, mxfp8, nvfp4); None: BF16
    # --use-megatron-fsdp with --data-parallel-sharding-strategy optim_grads_params, in place of the distributed
    # optimizer: weights, gradients and optimizer states sharded over DP x CP
    megatron_fsdp: bool = False

    @property
    def compile(self) -> bool:
        return False  # the planner runs Megatron eagerly

    @property
    def reshard_after_forward(self) -> bool:
        return True  # Megatron-FSDP frees gathered layers after their forward

    @property
    def kernels(self) -> tuple[str, ...]:
        return ()  # Transformer Engine's fused kernels are always on, not a lever

    @property
    def attention(self) -> str | None:
        return None

    @property
    def float8(self) -> str | None:
        return None  # its FP8 is low_precision
