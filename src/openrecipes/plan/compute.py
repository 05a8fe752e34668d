"""Seconds of a microbatch's operators (openrecipes.plan.ops) on one part: GEMMs and attention at a share of the
part's peak, memory-bound work at its HBM bandwidth.

- A GEMM runs at the part's dense peak for its precision (hardware/gpus.yaml: peak_bf16_flops, peak_fp8_flops,
  peak_mxfp8_flops, peak_nvfp4_flops) times an efficiency that depends on its shape. Measured, where the catalog
  holds a probe of the part with that precision (openrecipes.probe.tables, interpolated in log m, n, k); else the
  datasheet default: `ceiling x d / (d + gemm_half_dim)`, d = min(M, N, K). A GEMM is bound by its smallest
  dimension: its tiles (128 to 256 wide) fill the tensor cores only when every dimension spans several of them, and
  its operands are read for fewer FLOPs as d falls (arithmetic intensity ~ d). The ceiling (calibration.yaml
  `assumed.gemm_efficiency_ceiling`, per precision) is what cuBLAS reaches on large square GEMMs. A routed expert's
  grouped GEMM rises with its tokens per expert instead, `ceiling x m / (m + grouped_gemm_half_rows)`, times its
  engine's share (`<engine>_expert_efficiency`), and the busiest EP rank's load (`expert_load`) sets its time.
- Causal attention's FLOPs run at the flash kernel's efficiency: measured by a probe (its forward and backward
  FLOP/s by sequence length and head size), else `attention_efficiency x seq / (seq + attention_half_seq) x d /
  (d + attention_half_head_dim)` of the BF16 peak (FlashAttention-2/3's published curves rise with both).
- Memory-bound work: its bytes over the HBM bandwidth (a probe's measured copy bandwidth, else the datasheet's
  memory_bandwidth_tb_s at `assumed.hbm_efficiency`).
- A low precision (FP8, MXFP8, NVFP4) runs the block GEMMs at that precision's peak times its fitted
  `low_precision_efficiency` (pulled towards 1) and adds its casts as memory-bound bytes (CAST_BYTES per element of
  each GEMM's input, weight and output gradient). Without a probe of that precision the gain is the datasheet's.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from openrecipes.catalog.hardware import GpuSpec, load_reference_tables, precision_peak_flops
from openrecipes.catalog.paths import default_catalog_root
from openrecipes.errors import UserError
from openrecipes.plan.constants import Calibration
from openrecipes.plan.ops import TRAINING_PASSES, Gemm, Ops
from openrecipes.probe.tables import ProbeTables, attention_flops, tables_for

TB = 1e12
BF16 = "bf16"
# HBM bytes per element a low precision's casts move, each GEMM's input, weight and output gradient once a pass:
# FP8 with a per-tensor scale reads the BF16 tensor for its amax, reads it again to cast, writes one byte, and
# writes the transposed copy the backward's GEMMs take (2 + 2 + 1 + 2); MXFP8 and NVFP4 scale per block in one pass
# and write a row-wise and a column-wise copy with their block scales (2 + 2 for MXFP8, 2 + 1 + scales for NVFP4).
CAST_BYTES = {"fp8": 7.0, "mxfp8": 4.0, "nvfp4": 4.0}


@dataclass(frozen=True)
class Part:
    """What compute reads of a part: its datasheet block and, where the catalog holds one, its probe."""

    variant: str
    spec: GpuSpec
    probe: ProbeTables | None


def part_of(variant: str, catalog_root: Path | None) -> Part:
    root = catalog_root or default_catalog_root()
    return Part(variant, load_reference_tables(catalog_root).variants[variant], tables_for(variant, root))


@dataclass(frozen=True)
class ComputeTime:
    gemm_s: float
    attention_s: float
    memory_s: dict[str, float]  # by kind (openrecipes.plan.ops), casts included

    @property
    def total_s(self) -> float:
        return self.gemm_s + self.attention_s + sum(self.memory_s.values())


def peak_flops(part: Part, precision: str) -> float:
    """The dense peak of a precision; a part without one is bad input naming the field to add."""
    peak = precision_peak_flops(part.spec, precision)
    if peak is None:
        raise UserError(f"{part.variant} has no dense {precision} peak; where its vendor publishes one, add "
                        f"peak_{precision}_flops to its block of hardware/gpus.yaml")
    return peak


def measured(part: Part, precision: str) -> bool:
    """Whether the part's probe measured GEMMs in this precision (else its gain is the datasheet's)."""
    return part.probe is not None and precision in part.probe.gemm_precisions


def gemm_efficiency(gemm: Gemm, part: Part, precision: str, calibration: Calibration) -> float:
    """The share of the precision's peak a GEMM of this shape reaches (module docstring)."""
    if measured(part, precision):
        assert part.probe is not None
        return part.probe.gemm_efficiency(max(1, round(gemm.m)), gemm.n, gemm.k, precision)
    if gemm.grouped:  # its tokens per expert fill the grouped kernel's row tiles
        size, half = gemm.m, calibration.grouped_gemm_half_rows
    else:
        size, half = min(gemm.m, gemm.n, gemm.k), calibration.gemm_half_dim
    return calibration.gemm_efficiency_ceiling[precision] * size / (size + half)


def attention_flops_per_s(seq: int, head_dim: int, part: Part, calibration: Calibration) -> float:
    if part.probe is not None and part.probe.attention:
        return attention_flops(seq, 1, head_dim, 1) / part.probe.attention_s(seq, 1, head_dim, 1)
    return peak_flops(part, BF16) * calibration.attention_efficiency * seq / (seq + calibration.attention_half_seq) \
        * head_dim / (head_dim + calibration.attention_half_head_dim)


def hbm_bytes_per_s(part: Part, calibration: Calibration) -> float:
    if part.probe is not None and part.probe.copies:
        return part.probe.hbm_bytes_per_s
    return part.spec.memory_bandwidth_tb_s * TB * calibration.hbm_efficiency


def compute_time(ops: Ops, part: Part, low_precision: str | None, calibration: Calibration, engine: str,
                 expert_load: float = 1.0) -> ComputeTime:
    """The seconds of a microbatch's operators. `low_precision`: the family (fp8, mxfp8, nvfp4) the block GEMMs run
    in, None for BF16; `expert_load`: the busiest EP rank's routed tokens over the mean rank's."""
    gemm_s, cast_elements = 0.0, 0.0
    for gemm in ops.gemms:
        precision = low_precision if low_precision and gemm.low_precision else BF16
        rate = peak_flops(part, precision) * gemm_efficiency(gemm, part, precision, calibration)
        if precision != BF16:
            rate *= calibration.low_precision_efficiency[precision]
            cast_elements += gemm.count / TRAINING_PASSES * (gemm.m * gemm.k + gemm.k * gemm.n + gemm.m * gemm.n)
        if gemm.grouped:
            rate *= getattr(calibration, f"{engine}_expert_efficiency") / expert_load  # fitted per engine
        gemm_s += gemm.flops / rate
    attention = ops.attention
    attention_s = attention.flops / attention_flops_per_s(attention.seq, attention.head_dim, part, calibration)
    memory = dict(ops.memory_bytes)
    if low_precision:
        memory["casts"] = cast_elements * CAST_BYTES[low_precision]
    bandwidth = hbm_bytes_per_s(part, calibration)
    return ComputeTime(gemm_s, attention_s, {kind: value / bandwidth for kind, value in memory.items()})
