"""A probe file in the catalog (hardware/probes/<part>.json) is evidence like a raw log: its tables are derived
again from its raw timings, and it must be a full probe of the part it is filed under, and no faster than the
part's datasheet allows. A probe file that cannot be read, or is filed under another part, is bad input."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from openrecipes.audit.evidence import AuditReport
from openrecipes.catalog.hardware import ReferenceTables
from openrecipes.catalog.paths import relative_path
from openrecipes.probe.file import read_probe
from openrecipes.probe.tables import ProbeTables, tables
from openrecipes.verdict import Finding

PROBES = Path("hardware/probes")


def catalog_probes(root: Path) -> list[Path]:
    return sorted((root / PROBES).glob("*.json"))


def probe_report(path: Path, root: Path, reference: ReferenceTables) -> AuditReport:
    probe = read_probe(path, reference, filed_as=path.stem)
    findings = [Finding("quick", True, None, "a --quick probe times toy shapes; run `openrecipes probe` without "
                        "--quick on the part and file that")] if probe.quick else []
    findings += _above_datasheet(tables(probe, reference.variants[probe.part]), reference)
    return AuditReport(Path(relative_path(path, root)), "re-derived", tuple(findings))


def _above_datasheet(derived: ProbeTables, reference: ReferenceTables) -> Iterator[Finding]:
    """No GEMM beats the part's dense peak and no copy its HBM bandwidth: a timing that does was not of this part
    (or the clock lied)."""
    spec = reference.variants[derived.part]
    for index, point in enumerate(derived.gemm):
        if point.efficiency is not None and point.efficiency > 1:
            yield Finding(f"gemm[{index}]", None, round(point.flops_per_s / 1e12, 1),
                          f"{point.m}x{point.n}x{point.k} {point.precision} runs at {point.flops_per_s / 1e12:,.1f} "
                          f"TFLOP/s, {point.efficiency:.2f}x the part's dense peak (hardware/gpus.yaml); probe the "
                          "part again, or check the part's peak")
    if spec.memory_bandwidth_tb_s is not None and derived.hbm_bytes_per_s > spec.memory_bandwidth_tb_s * 1e12:
        yield Finding("copies", spec.memory_bandwidth_tb_s, round(derived.hbm_bytes_per_s / 1e12, 2),
                      f"the largest copy moves {derived.hbm_bytes_per_s / 1e12:,.2f} TB/s, above the part's HBM "
                      f"bandwidth of {spec.memory_bandwidth_tb_s} TB/s (hardware/gpus.yaml); probe the part again")
