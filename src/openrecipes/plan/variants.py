"""The compute efficiency of an engine on a hardware variant: its own fitted value where the variant has measured
points, else a neighbour's carried over by physics (docs/planning.md, "Hardware variants").

Two variants of one chip (the same dense peak: H100 SXM5 at 700 W, H100 96 GB held at 500 W, H200) differ in what
limits a step's compute: the sustained clock under the board's power, and the HBM bandwidth its memory-bound kernels
(norms, activations, softmax, optimizer) stream at. Dynamic power grows about as the cube of the clock (P ~ f V^2 with
V ~ f), so a part held below its chip's full power sustains (P / P_full)^(1/3) of the clock; a share
`memory_bound_share` of the neighbour's compute time scales with its HBM bandwidth instead. A variant of another chip
carries the neighbour's fraction of peak as it is (another chip is a transfer no term models; its range says so).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from openrecipes.catalog.hardware import GpuSpec, load_reference_tables
from openrecipes.catalog.paths import default_catalog_root
from openrecipes.errors import UserError
from openrecipes.plan.constants import Calibration
from openrecipes.probe.tables import tables_for

CLOCK_POWER_EXPONENT = 1 / 3  # sustained clock ~ power^(1/3): dynamic power ~ f V^2, V ~ f


@dataclass(frozen=True)
class Carried:
    """Where a variant's efficiency comes from: its own fitted value (source is the variant itself) or a neighbour's
    times the physical ratio."""

    variant: str
    source: str  # the variant whose fitted value it is
    ratio: float  # physics: the efficiency on `variant` over that on `source`

    @property
    def own(self) -> bool:
        return self.source == self.variant


def _same_chip(a: GpuSpec, b: GpuSpec) -> bool:
    return a.peak_bf16_flops == b.peak_bf16_flops and a.peak_fp8_flops == b.peak_fp8_flops


def _clock(spec: GpuSpec, specs: dict[str, GpuSpec]) -> float:
    """The sustained clock of a part as a share of its type's at full power: a part held below the highest power of
    its type (the H100 at 500 W, the B200 at 750 W). Parts of other types run at their own full power, whatever it is
    (an MI325X is not a faster-clocked MI300X)."""
    full = max(s.power_w for s in specs.values() if s.type == spec.type)
    return (spec.power_w / full) ** CLOCK_POWER_EXPONENT


# The GEMM a probe's efficiency is read at when a fit is carried between two probed parts: one layer's projection of
# a microbatch of 8,192 tokens at hidden size 8,192, the middle of the grid a probe measures.
PROBED_GEMM = (8192, 8192, 8192)


def physical_ratio(target: str, source: str, specs: dict[str, GpuSpec], share: float,
                   catalog_root: Path | None = None) -> float:
    """Efficiency on part `target` over efficiency on part `source`: (1 - share) of the time scales with the GEMMs,
    `share` with HBM bandwidth. Where both parts have a probe, both terms are measured (their BF16 GEMM efficiencies
    and copy bandwidths), between any two chips; else, for one chip, the sustained clocks under their power and the
    datasheets' bandwidths, and between two chips 1 (carried as it is)."""
    root = catalog_root or default_catalog_root()
    # a probe of each part committed to the catalog (hardware/probes/<part>.json, openrecipes.probe), or None
    measured_target, measured_source = tables_for(target, root), tables_for(source, root)
    if measured_target and measured_source:
        compute = (measured_source.gemm_efficiency(*PROBED_GEMM, "bf16")
                   / measured_target.gemm_efficiency(*PROBED_GEMM, "bf16"))
        bandwidth = measured_source.hbm_bytes_per_s / measured_target.hbm_bytes_per_s
    elif _same_chip(specs[target], specs[source]):
        compute = _clock(specs[source], specs) / _clock(specs[target], specs)
        bandwidth = specs[source].memory_bandwidth_tb_s / specs[target].memory_bandwidth_tb_s
    else:
        return 1.0
    return 1 / ((1 - share) * compute + share * bandwidth)


@cache
def carried(engine: str, variant: str, measured: frozenset[str], share: float,
            catalog_root: Path | None = None) -> Carried:
    """The source of `variant`'s efficiency among the variants `measured` (those with a fitted value for the
    engine): itself, else the one of the same chip whose physical correction is smallest (H100 SXM5 at 700 W from
    H200, the same clock and power, rather than from the H100 held at 500 W), else one of another chip, the same
    type first. The measured parts are the bundled catalog's (the fit's); the part asked about may be one only the
    catalog at `catalog_root` holds."""
    if variant in measured:
        return Carried(variant, variant, 1.0)
    specs = {**load_reference_tables(catalog_root).variants, **load_reference_tables().variants}
    if not measured:
        raise UserError(f"no {engine} efficiency is fitted on any GPU variant; add a measured {engine} point")
    target = load_reference_tables(catalog_root).variants[variant]
    specs[variant] = target

    def distance(name: str) -> tuple[bool, float, bool, str]:
        ratio = physical_ratio(variant, name, specs, share, catalog_root)
        return (not _same_chip(target, specs[name]), abs(math.log(ratio)), specs[name].type != target.type, name)

    source = min(measured, key=distance)
    return Carried(variant, source, physical_ratio(variant, source, specs, share, catalog_root))


def efficiency_source(calibration: Calibration, engine: str, variant: str,
                      catalog_root: Path | None = None) -> Carried:
    prefix = f"{engine}/"
    measured = frozenset(key[len(prefix):] for key in calibration.compute_efficiency if key.startswith(prefix))
    return carried(engine, variant, measured, calibration.memory_bound_share, catalog_root)


def efficiency(calibration: Calibration, engine: str, variant: str, catalog_root: Path | None = None) -> float:
    """The engine's fraction of dense peak inside a microbatch on this variant (own value or carried)."""
    source = efficiency_source(calibration, engine, variant, catalog_root)
    return calibration.compute_efficiency[f"{engine}/{source.source}"] * source.ratio
