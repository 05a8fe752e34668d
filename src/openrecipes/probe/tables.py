"""The tables a probe file's raw timings give, derived here and nowhere stored: `audit` derives them again from the
file, and the planner reads them for the part (`tables_for`) in place of the datasheet's defaults.

Each figure is taken from the median of its repeats:
- GEMM: 2·m·n·k FLOPs over the seconds; efficiency = that FLOP/s over the part's dense peak at the GEMM's
  precision (hardware/gpus.yaml, through catalog.hardware.precision_peak_flops).
- attention: the training FLOPs of causal attention as every figure of the catalog counts them
  (figures.attention_flops_per_token: forward 2 matmuls over half the context, backward twice that), over the
  seconds of the forward and backward pass.
- HBM: a copy reads and writes its size: 2·bytes over the seconds.
- collectives: bus bandwidth as nccl-tests defines it (its doc/PERFORMANCE.md): the message's bytes over the
  seconds, times 2(n-1)/n for an all-reduce and (n-1)/n for an all-gather, reduce-scatter or all-to-all among n GPUs.
"""

from __future__ import annotations

import math
import os
import statistics
from bisect import bisect_left
from dataclasses import dataclass
from functools import cached_property, lru_cache
from itertools import product
from pathlib import Path

from openrecipes import figures
from openrecipes.catalog.hardware import GpuSpec, hardware_dir, load_reference_tables, precision_peak_flops
from openrecipes.probe.file import CollectiveKind, ProbeFile, read_probe


@dataclass(frozen=True)
class GemmPoint:
    m: int
    n: int
    k: int
    precision: str
    seconds: float  # the median repeat
    flops_per_s: float
    efficiency: float | None  # of the part's dense peak at this precision; None where it has none (or is a CPU)


@dataclass(frozen=True)
class AttentionPoint:
    seq: int
    heads: int
    head_dim: int
    batch: int
    seconds: float
    flops_per_s: float


@dataclass(frozen=True)
class CopyPoint:
    size_bytes: int
    seconds: float
    bytes_per_s: float  # read and written


@dataclass(frozen=True)
class CollectivePoint:
    kind: CollectiveKind
    message_bytes: int
    gpus: int
    seconds: float
    bus_bytes_per_s: float


@dataclass(frozen=True)
class ProbeTables:
    part: str
    gemm: tuple[GemmPoint, ...]
    attention: tuple[AttentionPoint, ...]
    copies: tuple[CopyPoint, ...]
    collectives: tuple[CollectivePoint, ...]

    @cached_property
    def gemm_precisions(self) -> frozenset[str]:
        """The precisions whose GEMM efficiency is known: measured, on a part with a peak for them."""
        return frozenset(p.precision for p in self.gemm if p.efficiency is not None)

    @cached_property
    def _gemm_grids(self) -> dict[str, tuple[dict[tuple[int, ...], float], list[list[int]]]]:
        """Per precision, the measured efficiencies by shape and the grid's axes (a plan asks for each
        hundreds of thousands of times)."""
        grids = {}
        for precision in self.gemm_precisions:
            known: dict[tuple[int, ...], float] = {(p.m, p.n, p.k): p.efficiency for p in self.gemm
                     if p.precision == precision and p.efficiency is not None}
            grids[precision] = (known, _axes(known))
        return grids

    @cached_property
    def _gemm_memo(self) -> dict[tuple[int, int, int, str], float]:
        return {}

    def gemm_efficiency(self, m: int, n: int, k: int, precision: str) -> float:
        """The measured efficiency of an m x n x k GEMM, interpolated in log(m), log(n), log(k) over the measured
        shapes and clamped to their range. A precision outside `gemm_precisions` is a KeyError."""
        key = (m, n, k, precision)
        if key not in self._gemm_memo:
            if precision not in self._gemm_grids:
                raise KeyError(f"the probe of {self.part} has no {precision} GEMM efficiency")
            known, axes = self._gemm_grids[precision]
            self._gemm_memo[key] = log_interpolated(known, (m, n, k), axes)
        return self._gemm_memo[key]

    def attention_s(self, seq: int, heads: int, head_dim: int, batch: int) -> float:
        """Seconds of causal attention's forward and backward pass: its FLOPs at the FLOP/s measured at this
        sequence length and head size (interpolated in their logarithms, clamped to the measured range)."""
        rate = log_interpolated({(p.seq, p.head_dim): p.flops_per_s for p in self.attention}, (seq, head_dim))
        return attention_flops(seq, heads, head_dim, batch) / rate

    @property
    def hbm_bytes_per_s(self) -> float:
        """The bandwidth of the largest copy measured: the one least helped by caches."""
        return max(self.copies, key=lambda c: c.size_bytes).bytes_per_s

    def collective_bytes_per_s(self, kind: CollectiveKind, message_bytes: int, gpus: int) -> float | None:
        """Bus bandwidth of a collective among `gpus` GPUs, interpolated in log(message bytes) and clamped to the
        sizes measured; None where the probe measured no such collective among that many GPUs."""
        points: dict[tuple[int, ...], float] = {
            (p.message_bytes,): p.bus_bytes_per_s for p in self.collectives if (p.kind, p.gpus) == (kind, gpus)}
        return log_interpolated(points, (message_bytes,)) if points else None


def gemm_flops(m: int, n: int, k: int) -> float:
    return 2.0 * m * n * k


def attention_flops(seq: int, heads: int, head_dim: int, batch: int) -> float:
    """Training FLOPs of causal attention over `batch` sequences, q, k and v of `heads` x `head_dim`."""
    return batch * seq * figures.attention_flops_per_token(1, 2 * heads * head_dim, seq)


def copy_bytes_per_s(size_bytes: int, seconds: float) -> float:
    return 2.0 * size_bytes / seconds


def bus_bytes_per_s(kind: CollectiveKind, message_bytes: int, gpus: int, seconds: float) -> float:
    factor = 2 * (gpus - 1) / gpus if kind == "all_reduce" else (gpus - 1) / gpus
    return message_bytes / seconds * factor


def tables(probe: ProbeFile, spec: GpuSpec | None) -> ProbeTables:
    """The tables of a probe's raw timings on the part `spec` (None for a CPU probe: no peak, no efficiency)."""
    def peak(precision: str) -> float | None:
        return precision_peak_flops(spec, precision) if spec is not None else None

    gemm = []
    for g in probe.gemm:
        seconds = statistics.median(g.seconds)
        rate = gemm_flops(g.m, g.n, g.k) / seconds
        top = peak(g.dtype)
        gemm.append(GemmPoint(g.m, g.n, g.k, g.dtype, seconds, rate, rate / top if top else None))
    attention = [AttentionPoint(a.seq, a.heads, a.head_dim, a.batch, s := statistics.median(a.seconds),
                                attention_flops(a.seq, a.heads, a.head_dim, a.batch) / s) for a in probe.attention]
    copies = [CopyPoint(c.size_bytes, s := statistics.median(c.seconds), copy_bytes_per_s(c.size_bytes, s))
              for c in probe.copies]
    collectives = [CollectivePoint(c.kind, c.message_bytes, c.gpus, s := statistics.median(c.seconds),
                                   bus_bytes_per_s(c.kind, c.message_bytes, c.gpus, s)) for c in probe.collectives]
    return ProbeTables(probe.part, tuple(gemm), tuple(attention), tuple(copies), tuple(collectives))


def log_interpolated(points: dict[tuple[int, ...], float], at: tuple[int, ...],
                     axes: list[list[int]] | None = None) -> float:
    """Multilinear interpolation in the logarithms of the coordinates over a full grid of `points` (the probe file's
    reader refuses any other; `axes`, its sorted coordinates, where the caller keeps them), each coordinate clamped
    to its measured range."""
    corners: list[tuple[tuple[int, float], ...]] = []
    for axis, x in zip(axes or _axes(points), at, strict=True):
        x = min(max(x, axis[0]), axis[-1])
        above = bisect_left(axis, x)
        if axis[above] == x:
            corners.append(((axis[above], 1.0),))
            continue
        low, high = axis[above - 1], axis[above]
        weight = (math.log(x) - math.log(low)) / (math.log(high) - math.log(low))
        corners.append(((low, 1.0 - weight), (high, weight)))
    return sum(math.prod(w for _, w in corner) * points[tuple(c for c, _ in corner)] for corner in product(*corners))


def _axes(points: dict[tuple[int, ...], float]) -> list[list[int]]:
    return [sorted({shape[axis] for shape in points}) for axis in range(len(next(iter(points))))]


def tables_for(part: str, catalog_root: Path) -> ProbeTables | None:
    """The measured tables of a part of hardware/gpus.yaml: from its probe file, hardware/probes/<part>.json of the
    catalog's hardware folder, checked whole (a fault is a UserError naming the file and line); None where the
    part has none."""
    path = hardware_dir(Path(catalog_root)) / "probes" / f"{part}.json"
    try:
        stamp = os.stat(path)
    except FileNotFoundError:
        return None
    return _read_tables(path, part, Path(catalog_root), (stamp.st_mtime_ns, stamp.st_size))


@lru_cache(maxsize=16)
def _read_tables(path: Path, part: str, catalog_root: Path, stamp: tuple[int, int]) -> ProbeTables:
    """Read once per version of the file (`stamp`): the planner asks for a part's tables for every layout."""
    reference = load_reference_tables(catalog_root)
    return tables(read_probe(path, reference, filed_as=part), reference.variants[part])
