"""What the torchtitan levers beyond the layout (fused kernels, attention backend, float8) do to memory and time.

Memory, from first principles:
- liger-fused-linear-cross-entropy (Liger-Kernel, liger_kernel/ops/fused_linear_cross_entropy.py): the output
  projection and the loss run chunk by chunk. A chunk holds next_power_of_2(tokens / ceil(vocab / hidden)) tokens,
  so its BF16 logits, overwritten in place by their gradient, are about the size of the microbatch's hidden states;
  the gradients of the hidden states (tokens x hidden) and of the output weight (vocab x hidden) are computed in the
  forward and held until the backward. The FP32 logits of the whole microbatch (tokens x vocab x 4 B, and their
  gradient) never exist.
- liger-rmsnorm: Liger's RMSNorm casts inside its kernel and saves its input and one FP32 inverse RMS per row, so
  eager AMP's FP32 composite norms (openrecipes.plan.memory.AMP_COMPOSITE_NORM_BYTES) keep nothing.
- liger-swiglu, liger-rope, the attention backend and float8 have no memory term. The planner already counts
  SwiGLU's saved tensors as a fused kernel keeps them (the gate and up outputs, and their product as the down
  projection's input), which is what Liger's SwiGLU saves (it recomputes the SiLU in the backward); RoPE and every
  attention backend save the same tensors; the FP8 copies float8 training saves are not modelled, so a float8
  layout is planned with BF16 memory.

Time: a measured factor per lever and GPU type, read from pairs of our own runs (reference_points.yaml, own_runs)
that differ by that lever alone: tokens/s with it over tokens/s without. A lever without such a pair has an
unmeasured time effect: the plan predicts it as without the lever and names it unmeasured. The factors of several
levers multiply (their effects are taken as independent).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from openrecipes.catalog.model import ATTENTION_BACKENDS, FLOAT8_SCALINGS, KERNELS
from openrecipes.catalog.yamlio import read_yaml
from openrecipes.errors import UserError
from openrecipes.plan.constants import BF16_BYTES, HERE
from openrecipes.plan.layouts import Layout

FUSED_LINEAR_CROSS_ENTROPY = "liger-fused-linear-cross-entropy"
FUSED_RMSNORM = "liger-rmsnorm"
_LEVER_KEYS = ("kernels", "attention", "float8")
_LAYOUT_DEFAULTS = {"compile": False, "reshard_after_forward": True}  # as openrecipes.plan.calibrate reads a point


def lever_names(layout: Layout) -> tuple[str, ...]:
    """The levers a layout pulls, one name each: its kernels, `attention NAME`, `float8 SCALING`."""
    return (*layout.kernels, *([f"attention {layout.attention}"] if layout.attention else []),
            *([f"float8 {layout.float8}"] if layout.float8 else []))


def fused_cross_entropy_bytes(tokens: int, vocab: int, hidden: int, tp: int = 1) -> float:
    """Liger's fused linear cross-entropy at its peak on one GPU: one chunk's BF16 logits, the hidden states'
    gradient and the output weight's gradient (module docstring), each split over TP as the output layer is."""
    chunk = 2 ** math.ceil(math.log2(max(1, math.ceil(tokens / math.ceil(vocab / hidden)))))
    return (chunk * vocab + tokens * hidden + vocab * hidden) * BF16_BYTES / tp


@dataclass(frozen=True)
class MeasuredFactor:
    factor: float  # tokens/s with the lever over without: the geometric mean over its pairs
    pairs: tuple[str, ...]  # "with / without" point names it comes from


def _names_of(row: dict) -> tuple[str, ...]:
    lay = row["layout"]
    return (*lay.get("kernels", ()), *([f"attention {lay['attention']}"] if lay.get("attention") else []),
            *([f"float8 {lay['float8']}"] if lay.get("float8") else []))


def _twin_key(row: dict) -> tuple:
    lay = {key: value for key, value in (_LAYOUT_DEFAULTS | row["layout"]).items() if key not in _LEVER_KEYS}
    return (row["model"], row["gpu"], row["gpus"], row["row_tokens"], row["global_batch"], tuple(sorted(lay.items())))


@lru_cache(maxsize=1)
def measured_factors() -> dict[tuple[str, str], MeasuredFactor]:
    """(GPU type, lever) -> its measured time factor, from own_runs points that differ by that lever alone."""
    rows = [row for row in read_yaml(HERE / "reference_points.yaml").data["own_runs"]["points"]
            if row.get("tokens_per_s_per_gpu")]
    samples: dict[tuple[str, str], list[tuple[float, str]]] = {}
    for with_lever in rows:
        for without in rows:
            added = set(_names_of(with_lever)) - set(_names_of(without))
            if (_twin_key(with_lever) == _twin_key(without) and len(added) == 1
                    and set(_names_of(without)) < set(_names_of(with_lever))):
                ratio = with_lever["tokens_per_s_per_gpu"] / without["tokens_per_s_per_gpu"]
                samples.setdefault((with_lever["gpu"], added.pop()), []).append(
                    (ratio, f"{with_lever['name']} / {without['name']}"))
    return {key: MeasuredFactor(math.exp(sum(math.log(r) for r, _ in found) / len(found)),
                                tuple(name for _, name in found)) for key, found in samples.items()}


@dataclass(frozen=True)
class TimeEffect:
    speedup: float  # the product of the measured factors (1 when none is measured)
    unmeasured: tuple[str, ...]  # levers whose time effect no pair of runs has measured on this GPU type


def time_effect(layout: Layout, gpu_type: str) -> TimeEffect:
    names = lever_names(layout)
    if not names:  # most layouts: the product of no factors, without reading them
        return TimeEffect(1, ())
    factors = measured_factors()
    speedup = math.prod(factors[(gpu_type, name)].factor for name in names if (gpu_type, name) in factors)
    return TimeEffect(speedup, tuple(name for name in names if (gpu_type, name) not in factors))


def parse_levers(kernels: str | None, attention: str | None, float8: str | None) -> dict:
    """`--kernels A,B`, `--attention NAME` and `--float8 SCALING` as a request's lever fields; kernels in the
    recipes' canonical order. A name outside the allowed ones is an error naming the option and the allowed ones."""
    chosen = [name.strip() for name in (kernels or "").split(",") if name.strip()]
    for option, values, allowed in (("--kernels", chosen, KERNELS), ("--attention", [attention] if attention else [],
                                    ATTENTION_BACKENDS), ("--float8", [float8] if float8 else [], FLOAT8_SCALINGS)):
        unknown = [value for value in values if value not in allowed]
        if unknown:
            raise UserError(f"{option} {','.join(unknown)}: not one of {', '.join(allowed)}")
    return {"kernels": tuple(k for k in KERNELS if k in chosen), "attention": attention, "float8": float8}
