"""The planner held out against the public record by source and scale band, and against each weak-scaling sweep.

Every published entry the planner can express is a point of its fit, so its honest error is its leave-one-out
error (plan/public_record.py's `Compared.error`, from heldout.json). This groups those errors by the source the
entry was imported from and by GPU count (1-8, 9-64, 65-1,024, 1,025+): the median and worst error and the share
within 20%. For each sweep (one layout at growing GPU counts, `published.derivation.sweep`), it sets the efficiency
lost from the smallest to the largest count as published beside the loss the held-out predictions give. Entries
the planner cannot express are counted here and listed with their reason in public_record.json.
"""

from __future__ import annotations

from dataclasses import dataclass

from openrecipes.catalog.store import Catalog
from openrecipes.plan.public_record import Compared, compared, error_figures, held_out_errors
from openrecipes.plan.trust import BANDS, band_of

SOURCES = {"record-dgxc-": "dgxc-benchmarking", "record-mlperf-": "MLPerf Training",
           "record-mbridge-": "Megatron-Bridge", "record-titan-": "torchtitan"}


def source_of(name: str) -> str:
    return next((source for prefix, source in SOURCES.items() if name.startswith(prefix)), "other")


@dataclass(frozen=True)
class BandRow:
    source: str
    band: str
    entries: int
    expressed: int  # entries with a held-out prediction
    median_abs_error: float | None
    worst_error: float | None  # the error of the largest magnitude, its sign kept
    within: float | None  # share of the expressed entries within WITHIN


@dataclass(frozen=True)
class SweepRow:
    sweep: str
    smallest: int
    largest: int
    published_loss: float  # 1 - tokens/s per GPU at the largest count / at the smallest
    predicted_loss: float | None  # the same from the held-out predictions; None where either is missing


def band_rows(rows: list[Compared]) -> list[BandRow]:
    groups: dict[tuple[str, str], list[Compared]] = {}
    for row in rows:
        groups.setdefault((source_of(row.name), band_of(row.gpus)), []).append(row)
    order = {label: i for i, (_, _, label) in enumerate(BANDS)}
    out = []
    for (source, band), group in sorted(groups.items(), key=lambda item: (item[0][0], order[item[0][1]])):
        errors = held_out_errors(group)
        out.append(BandRow(source, band, len(group), len(errors), *error_figures(errors)))
    return out


def sweep_rows(catalog: Catalog, rows: list[Compared]) -> list[SweepRow]:
    by_slug = {row.slug: row for row in rows}
    groups: dict[str, list[Compared]] = {}
    for entry in catalog.record:
        run = entry.entry.published
        if run is not None and run.derivation is not None and run.derivation.sweep and entry.slug in by_slug:
            groups.setdefault(run.derivation.sweep, []).append(by_slug[entry.slug])
    out = []
    for sweep, group in sorted(groups.items()):
        if len({r.gpus for r in group}) < 2:
            continue
        small, large = min(group, key=lambda r: r.gpus), max(group, key=lambda r: r.gpus)
        predicted = (round(1 - large.held_out / small.held_out, 4)
                     if large.held_out is not None and small.held_out is not None else None)
        out.append(SweepRow(sweep, small.gpus, large.gpus, round(1 - large.published / small.published, 4),
                            predicted))
    return out


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:+.1f}%"


def _share(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.0f}%"


def report(catalog: Catalog) -> str:
    """The two Markdown tables docs/public-record.md and benchmarks/RESULTS.md carry."""
    rows = compared(catalog)
    lines = ["| source | GPUs | entries | held out | median error | worst error | within ±20% |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    for r in band_rows(rows):
        median = "n/a" if r.median_abs_error is None else f"{100 * r.median_abs_error:.1f}%"
        lines.append(f"| {r.source} | {r.band} | {r.entries} | {r.expressed} | {median} | {_percent(r.worst_error)} "
                     f"| {_share(r.within)} |")
    sweeps = sweep_rows(catalog, rows)
    lines += ["", "| sweep | GPUs | efficiency lost, published | held-out prediction | difference |",
              "| --- | --- | ---: | ---: | ---: |"]
    for s in sweeps:
        difference = "n/a" if s.predicted_loss is None else f"{100 * (s.predicted_loss - s.published_loss):+.1f} pt"
        lines.append(f"| {s.sweep} | {s.smallest:,} → {s.largest:,} | {_percent(s.published_loss)} | "
                     f"{_percent(s.predicted_loss)} | {difference} |")
    return "\n".join(lines) + "\n"
