"""Kernel and attention choices, applied to torchtitan's stock model from our entry module (torchtitan is not forked).

    --openrecipes.kernels liger-rmsnorm,liger-swiglu,liger-rope,liger-fused-linear-cross-entropy
    --openrecipes.attention sdpa-cudnn | sdpa-flash | sdpa-efficient | flex

Each Liger-Kernel choice swaps the class of the modules it replaces (parameters, names, init and FSDP wrapping stay
torchtitan's) or, for RoPE, the model module's rotary function. The fused linear cross-entropy moves the loss into the
output layer: the head is given the microbatch's labels before the forward pass and returns the summed loss, so the
[tokens x vocabulary] logits are never materialised (torchtitan's loss casts them to FP32: 5 GB a 8,192-token row at
Qwen3's 151,936-entry vocabulary). Only the models whose blocks use torchtitan's Qwen3/Llama-3 module shapes are
supported; anything else exits with the reason.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from openrecipes.catalog.model import ATTENTION_BACKENDS as ATTENTION
from openrecipes.catalog.model import KERNELS

KERNELS_FLAG = "--openrecipes.kernels"
ATTENTION_FLAG = "--openrecipes.attention"
IGNORE_INDEX = -100  # torchtitan's loss.IGNORE_INDEX: the rows' unsupervised targets


def parse_kernels(value: str) -> tuple[str, ...]:
    names = tuple(name for name in value.split(",") if name)
    unknown = [name for name in names if name not in KERNELS]
    if unknown or not names or len(set(names)) != len(names):
        raise SystemExit(f"{KERNELS_FLAG} takes distinct names from {', '.join(KERNELS)}; got {value!r}")
    return tuple(name for name in KERNELS if name in names)


def parse_attention(value: str) -> str:
    if value not in ATTENTION:
        raise SystemExit(f"{ATTENTION_FLAG} takes one of {', '.join(ATTENTION)}; got {value!r}")
    return value


class LigerRMSNorm(nn.RMSNorm):
    """torchtitan's nn.RMSNorm with Liger's Triton forward and backward (same weight, same eps)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        from liger_kernel.ops.rms_norm import LigerRMSNormFunction

        eps = self.eps if self.eps is not None else torch.finfo(x.dtype).eps
        return LigerRMSNormFunction.apply(x, self.weight, eps, 0.0, "llama", False)


class LigerSwiGLU(nn.Module):
    """Class swapped onto torchtitan's FeedForward (w1, w2, w3): silu(w1 x) * w3 x in one Liger kernel."""

    w1: nn.Linear
    w2: nn.Linear
    w3: nn.Linear

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        from liger_kernel.ops.swiglu import LigerSiLUMulFunction

        return self.w2(LigerSiLUMulFunction.apply(self.w1(x), self.w3(x)))


class FusedLinearCrossEntropyHead(nn.Linear):
    """torchtitan's output Linear, returning the summed cross-entropy of the labels it was handed instead of logits."""

    labels: torch.Tensor | None = None

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        from liger_kernel.ops.fused_linear_cross_entropy import LigerFusedLinearCrossEntropyFunction

        if self.labels is None:
            raise RuntimeError("the fused cross-entropy head ran without labels (see KernelTrainer)")
        # FP32 accumulation of the weight gradient across vocabulary chunks, as torchtitan's FP32 loss would give.
        loss = LigerFusedLinearCrossEntropyFunction.apply(
            h.flatten(0, 1), self.weight, self.labels.flatten(0, 1), None, None, IGNORE_INDEX, 0.0, 0.0, "sum",
            None, False, torch.float32)
        return loss[0] if isinstance(loss, tuple) else loss


def liger_rotary_emb(xq: torch.Tensor, xk: torch.Tensor, rope_cache: torch.Tensor,
                     positions: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Same contract as torchtitan's qwen3/llama `apply_rotary_emb` with the [cos | sin] cache (rotate-half form)."""
    from liger_kernel.ops.rope import LigerRopeFunction

    if positions is not None:
        raise SystemExit("liger-rope supports contiguous positions only (no per-row position ids)")
    seqlen, head_dim = xq.shape[1], xq.shape[-1]
    cos = rope_cache[:seqlen, :head_dim].to(xq.dtype)
    sin = rope_cache[:seqlen, head_dim:].to(xq.dtype)
    q, k = LigerRopeFunction.apply(xq.transpose(1, 2), xk.transpose(1, 2), cos, sin)
    return q.transpose(1, 2), k.transpose(1, 2)


@functools.cache
def liger_swiglu_class(feed_forward: type[nn.Module]) -> type[nn.Module]:
    """One swapped class per feed-forward class: compiled blocks guard on the module's type, so a class per module
    would recompile every block."""
    return type("LigerSwiGLU" + feed_forward.__name__, (LigerSwiGLU, feed_forward), {})


def swap_modules(model: nn.Module, kernels: tuple[str, ...]) -> dict[str, int]:
    """Swap the classes of the modules each kernel replaces; returns how many of each were swapped (for the log)."""
    swapped = dict.fromkeys(kernels, 0)
    for module in model.modules():
        if "liger-rmsnorm" in kernels and type(module) is nn.RMSNorm:
            module.__class__ = LigerRMSNorm
            swapped["liger-rmsnorm"] += 1
        elif "liger-swiglu" in kernels and {"w1", "w2", "w3"} <= set(dict(module.named_children())):
            module.__class__ = liger_swiglu_class(type(module))  # type: ignore[arg-type]  # a class hashes
            swapped["liger-swiglu"] += 1
    output = getattr(model, "output", None)
    if "liger-fused-linear-cross-entropy" in kernels:
        if type(output) is not nn.Linear:
            raise SystemExit("liger-fused-linear-cross-entropy needs the model's `output` to be a plain Linear")
        output.__class__ = FusedLinearCrossEntropyHead
        swapped["liger-fused-linear-cross-entropy"] = 1
    if "liger-rope" in kernels:
        swapped["liger-rope"] = 1
    missing = [name for name, count in swapped.items() if count == 0]
    if missing:
        raise SystemExit(f"{KERNELS_FLAG}: this model has no module for {', '.join(missing)}")
    return swapped


def patch_rotary(model_module_name: str) -> None:
    module = importlib.import_module(model_module_name)
    if not hasattr(module, "apply_rotary_emb"):
        raise SystemExit(f"liger-rope: {model_module_name} has no apply_rotary_emb to replace")
    module.__dict__["apply_rotary_emb"] = liger_rotary_emb  # the global the model's Attention.forward looks up


def with_kernels(model_cls: type[nn.Module], kernels: tuple[str, ...],
                 report: Callable[[str], None]) -> type[nn.Module]:
    """The stock model class, with the kernels swapped in as soon as the (meta-device) model is built."""
    if "liger-rope" in kernels:
        patch_rotary(model_cls.__module__)

    class KernelModel(model_cls):  # type: ignore[valid-type, misc]  # a class chosen at run time
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            swapped = swap_modules(self, kernels)
            report("openrecipes kernels: " + ", ".join(f"{name} x{count}" for name, count in swapped.items()))

    KernelModel.__name__ = KernelModel.__qualname__ = model_cls.__name__
    return KernelModel


def summed_loss(pred: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """The loss function when the head already returned the summed loss."""
    del labels
    return pred


def use_attention(attention: str, model_args: Any) -> Any:
    """Pin torchtitan's SDPA wrapper to one backend, or switch the model to flex attention (causal mask)."""
    import dataclasses

    from torch.nn.attention import SDPBackend
    from torchtitan.models.attention import ScaledDotProductAttentionWrapper

    if attention == "flex":
        return dataclasses.replace(model_args, attn_type="flex", attn_mask_type="causal")
    backend = {"sdpa-cudnn": SDPBackend.CUDNN_ATTENTION, "sdpa-flash": SDPBackend.FLASH_ATTENTION,
               "sdpa-efficient": SDPBackend.EFFICIENT_ATTENTION}[attention]
    ScaledDotProductAttentionWrapper.sdpa_backends = [backend]
    return model_args


def kernel_trainer(trainer_cls: type) -> type:
    """torchtitan's Trainer, handing each microbatch's labels to the fused cross-entropy head before its forward."""

    class KernelTrainer(trainer_cls):  # torchtitan's Trainer, imported at run time
        def forward_backward_step(self, *, input_dict: dict[str, torch.Tensor], labels: torch.Tensor,
                                  global_valid_tokens: torch.Tensor) -> torch.Tensor:
            if self.parallel_dims.pp_enabled or self.parallel_dims.tp_enabled or self.parallel_dims.cp_enabled:
                raise SystemExit("liger-fused-linear-cross-entropy runs without TP, PP and CP only")
            heads = [m for part in self.model_parts for m in part.modules()
                     if isinstance(m, FusedLinearCrossEntropyHead)]
            for head in heads:
                head.labels = labels
            try:
                return super().forward_backward_step(
                    input_dict=input_dict, labels=labels, global_valid_tokens=global_valid_tokens)
            finally:
                for head in heads:
                    head.labels = None

    return KernelTrainer
