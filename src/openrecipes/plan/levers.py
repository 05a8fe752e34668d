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

Each lever's spellings are plan/words.py's. `lever_groups` gives the settings `plan` enumerates for every layout (and
`tune` measures): torch.compile on and off, reshard-after-forward on and off where FSDP shards, and each kernel,
attention backend and FP8 scaling whose time factor was measured on the GPU type (or every one, where a search asks
for them all). Megatron's levers (recompute, VP, sequence parallel, optimizer offload, `--precision`) are layout
fields.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from openrecipes.catalog.model import ATTENTION_BACKENDS, FLOAT8_SCALINGS, KERNELS
from openrecipes.catalog.yamlio import read_yaml
from openrecipes.engines.levers import Levers
from openrecipes.engines.registry import engine_named
from openrecipes.errors import UserError
from openrecipes.plan.constants import BF16_BYTES, HERE
from openrecipes.plan.layouts import LOW_PRECISIONS, Layout, offload_group
from openrecipes.plan.words import lever_names, names_of

FUSED_LINEAR_CROSS_ENTROPY = "liger-fused-linear-cross-entropy"
FUSED_RMSNORM = "liger-rmsnorm"
_LEVER_KEYS = ("kernels", "attention", "float8")
_LAYOUT_DEFAULTS = {"compile": False, "reshard_after_forward": True}  # as openrecipes.plan.calibrate reads a point


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
    return names_of(tuple(lay.get("kernels", ())), lay.get("attention"), lay.get("float8"))


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
    """The measured factors of the layout's levers. A float8 scaling without one is no unmeasured lever: its GEMMs
    run at the FP8 peak (gemm_precision, openrecipes.plan.compute)."""
    names = lever_names(layout.levers)
    if not names:  # most layouts: the product of no factors, without reading them
        return TimeEffect(1, ())
    factors = measured_factors()
    speedup = math.prod(factors[(gpu_type, name)].factor for name in names if (gpu_type, name) in factors)
    float8 = names_of((), None, layout.levers.float8)
    return TimeEffect(speedup, tuple(name for name in names if (gpu_type, name) not in factors
                                     and name not in float8))


def gemm_precision(layout: Layout, gpu_type: str) -> str | None:
    """The format the layout's block GEMMs run in where it is not BF16: Megatron's precision, or torchtitan's float8
    where no pair of our runs measured its factor on the GPU type (a measured factor times it instead)."""
    levers = layout.levers
    if levers.low_precision is not None:
        return LOW_PRECISIONS[levers.low_precision]
    if levers.float8 is not None and (gpu_type, *names_of((), None, levers.float8)) not in measured_factors():
        return "fp8"
    return None


def parse_levers(kernels: str | None, attention: str | None, float8: str | None) -> tuple[dict, LeverSearch]:
    """`--kernels A,B`, `--attention NAME` and `--float8 SCALING|measured|none` as a request's fixed lever fields
    (kernels in the recipes' canonical order) and what is left to search: a lever given is fixed. FP8 is a precision
    of its own board, never ranked with BF16, so a plan is BF16 unless asked: `--float8 measured` adds each scaling
    measured on the GPU type. A name outside the allowed ones is an error naming the option and the allowed ones."""
    chosen = [name.strip() for name in (kernels or "").split(",") if name.strip()]
    scaling = None if float8 in ("none", "measured") else float8
    for option, values, allowed in (("--kernels", chosen, KERNELS), ("--attention", [attention] if attention else [],
                                    ATTENTION_BACKENDS), ("--float8", [scaling] if scaling else [],
                                                          (*FLOAT8_SCALINGS, "measured", "none"))):
        unknown = [value for value in values if value not in allowed]
        if unknown:
            raise UserError(f"{option} {','.join(unknown)}: not one of {', '.join(allowed)}")
    fixed = {"kernels": tuple(k for k in KERNELS if k in chosen), "attention": attention, "float8": scaling}
    return fixed, LeverSearch(float8="measured" if float8 == "measured" else "none")


# Which choices of a torchtitan lever the enumeration tries: none of them, the ones with a time factor measured on
# the GPU type, or all of them (a search that measures each, `tune --kernels`).
LeverScope = Literal["none", "measured", "all"]


@dataclass(frozen=True)
class LeverSearch:
    """What `plan` enumerates beyond the layout (torchtitan; Megatron's levers are layout fields)."""
    compile: bool = True  # torch.compile on and off (else eager only)
    reshard: bool = True  # reshard-after-forward on and off where FSDP shards (else on only)
    kernels: LeverScope = "measured"
    attention: LeverScope = "measured"
    float8: LeverScope = "none"  # FP8 is a board of its own: searched only when asked (`--float8 measured`)


# tune: BF16, compile and resharding searched, kernels and attention only when asked.
BF16_SEARCH = LeverSearch(kernels="none", attention="none", float8="none")
# The kernel choices a full search tries: no kernel, each alone, all of them (each one's effect, and theirs together).
KERNEL_CHOICES: tuple[tuple[str, ...], ...] = ((), *((kernel,) for kernel in KERNELS), KERNELS)
ATTENTION_CHOICES: tuple[str | None, ...] = (None, *ATTENTION_BACKENDS)
FLOAT8_CHOICES: tuple[str | None, ...] = (None, *FLOAT8_SCALINGS)


# The levers with a memory term (module docstring): the only ones that can pay for a measured slowdown, by letting a
# layout fit that does not fit without them.
MEMORY_LEVERS = frozenset({FUSED_LINEAR_CROSS_ENTROPY, FUSED_RMSNORM})


def _worth_trying(gpu_type: str) -> set[str]:
    """The levers measured on this GPU type that can help a layout: faster, or a memory term. One measured slower
    and without a memory term can only lose against the same layout without it, so it is not enumerated."""
    return {name for (gpu, name), measured in measured_factors().items()
            if gpu == gpu_type and (measured.factor > 1 or name in MEMORY_LEVERS)}


def _scoped(scope: LeverScope, choices: tuple, names: dict, worth: set[str]) -> tuple:
    if scope == "all":
        return choices
    if scope == "none":
        return choices[:1]
    return tuple(c for c in choices if c == choices[0] or names[c] <= worth)


def lever_groups(engine: str, gpu_type: str, search: LeverSearch, kernels: tuple[str, ...] = (),
                 attention: str | None = None, float8: str | None = None, grad_reduce_bf16: bool = False,
                 low_precision: str | None = None) -> tuple[tuple[Levers, ...], ...]:
    """The lever blocks the enumeration gives every layout, in groups alike but for the optimizer fraction offloaded
    (openrecipes.plan.layouts.offload_group). Kernels, attention and float8 given here are fixed (every layout pulls
    them); the others are searched as `search` says, each only where the engine has the lever (Megatron has none of
    these: one group, of its gradient precision and low precision)."""
    has = engine_named(engine).has_lever
    measured = _worth_trying(gpu_type)
    kernel_names = {k: set(names_of(k, None, None)) for k in KERNEL_CHOICES}
    kernel_choices = (kernels,) if kernels or not has("kernels") else _scoped(
        search.kernels, KERNEL_CHOICES, kernel_names, measured)
    attention_choices = (attention,) if attention or not has("attention") else _scoped(
        search.attention, ATTENTION_CHOICES, {a: set(names_of((), a, None)) for a in ATTENTION_CHOICES}, measured)
    float8_choices = (float8,) if float8 or not has("float8") else _scoped(
        search.float8, FLOAT8_CHOICES, {f: set(names_of((), None, f)) for f in FLOAT8_CHOICES}, measured)
    return tuple(offload_group(engine, compile=c, reshard_after_forward=r, kernels=k, attention=a, float8=f,
                               grad_reduce_bf16=grad_reduce_bf16, low_precision=low_precision)
                 for f in float8_choices for k in kernel_choices for a in attention_choices
                 for c in ((False, True) if search.compile and has("compile") else (False,))
                 for r in ((True, False) if search.reshard and has("reshard_after_forward") else (True,)))
