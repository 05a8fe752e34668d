"""torchtitan 0.2.2's levers beyond a layout's degrees: torch.compile, FSDP's reshard after forward, Liger-Kernel
kernels, a pinned attention backend and torchao's float8 linear layers."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TorchtitanLevers:
    compile: bool = False  # --compile.enable: each block and the loss compiled
    reshard_after_forward: bool = True  # False: --parallelism.fsdp_reshard_after_forward never
    kernels: tuple[str, ...] = ()  # Liger-Kernel kernels in the recipes' canonical order
    attention: str | None = None  # None: SDPA trying cuDNN, then Flash, then math
    float8: str | None = None  # torchao float8 scaling; None: BF16

    @property
    def low_precision(self) -> str | None:
        return None  # its FP8 is float8's, not Transformer Engine's

    @property
    def offload_fraction(self) -> float:
        return 0.0  # the optimizer stays on the GPU

    @property
    def grad_reduce_bf16(self) -> bool:
        return False  # FSDP2 reduces FP32 gradients

    @property
    def megatron_fsdp(self) -> bool:
        return False
