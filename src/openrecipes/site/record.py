"""The public record on the site: published runs of other people, one table per model and GPU type, and the points
of a model page's scaling plot.

The record's figures are author-reported and never ranked: its tables are ordered by engine, GPU count, precision
and sequence length, never by speed, and sit apart from the leaderboards. Every derived figure (data-parallel size,
implied TFLOP/s, MFU) comes from catalog/published.py, and whether the source's TFLOP/s agrees with ours from its
`check_published` finding, so the site shows what `openrecipes validate` concludes.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from openrecipes import figures
from openrecipes.audit.evidence import AuditReport
from openrecipes.catalog.evidence import evidence_level
from openrecipes.catalog.model import PublishedRun, Recipe
from openrecipes.catalog.published import PublishedFigures, check_published, published_figures, published_label
from openrecipes.catalog.store import Catalog, CatalogEntry, SummaryEntry

AGREEMENT_FIELD = "published.model_tflops_per_gpu"
MIN_POINTS = 2  # a weak-scaling sweep needs two GPU counts to show a slope
# A model's record on one GPU type continues on further pages past either limit, so no page outgrows the site's
# 300 KB: rows of about 2 KB each, and the page's sweeps drawn together on one plot.
RECORD_PAGE_ROWS = 100
RECORD_PAGE_SWEEPS = 10


@dataclass(frozen=True)
class RecordRow:
    """One published run as its table row shows it."""

    entry: SummaryEntry
    figures: PublishedFigures | None  # None where the model card lacks the attention shape
    disagreement: str | None  # the finding where the source's TFLOP/s is beyond the tolerance of ours
    page: str = ""  # the site path of the record page that shows it (record_pages sets it)

    @property
    def run(self) -> PublishedRun:
        assert self.entry.entry.published is not None  # only structured entries become rows
        return self.entry.entry.published

    @property
    def gpus(self) -> int:
        return self.entry.entry.gpu.count

    @property
    def label(self) -> str:
        return published_label(self.run, self.gpus)

    @property
    def source_url(self) -> str:
        """The source table's row on GitHub, at the commit it was copied from (plain text, so a Markdown file's line
        anchor works)."""
        ref = self.run.reference
        return f"https://github.com/{ref.repository}/blob/{ref.commit}/{ref.path}?plain=1#L{ref.line}"

    @property
    def anchor(self) -> str:
        return f"run-{self.entry.name}"

    @property
    def caveats(self) -> list[str]:
        """The source's own words of warning, quoted in the entry's note (e.g. that MoE benchmarks force-balance the
        tokens among experts): they bear on every figure of the row, so the row shows them."""
        return source_caveats(self.entry.entry.note)

    @property
    def published_mfu(self) -> float | None:
        """The MFU the source published (a fraction), where it published one."""
        derivation = self.run.derivation
        percent = derivation.published_mfu_percent if derivation else None
        return None if percent is None else percent / 100

    @property
    def our_mfu(self) -> float | None:
        """Ours against the same peak the source's is read against: the dense peak of the run's own precision."""
        if self.figures is None:
            return None
        return self.figures.mfu_precision if self.figures.mfu_precision is not None else self.figures.mfu_bf16

    @property
    def mfu_differs(self) -> bool:
        """The published MFU and ours differ as shown (to 0.1 %): the row then says why."""
        published, ours = self.published_mfu, self.our_mfu
        return published is not None and ours is not None and round(published * 1000) != round(ours * 1000)


# How an imported entry's note quotes its source: `The source: "..."`, `The source's footnote: "..."`.
_SOURCE_QUOTE = re.compile(r"The source(?:'s \w+)?: \"([^\"]+)\"")


def source_caveats(note: str | None) -> list[str]:
    """The sentences an entry's note quotes from its source, in order, each once."""
    return list(dict.fromkeys(match.group(1) for match in _SOURCE_QUOTE.finditer(note or "")))


def global_batches(rows: list[RecordRow]) -> tuple[int, int] | None:
    """The smallest and largest published global batch (sequences per step) of these runs; None where none says."""
    batches = [row.run.global_batch for row in rows if row.run.global_batch]
    return (min(batches), max(batches)) if batches else None


def record_path(folder: str, gpu_type: str) -> str:
    """The page of a model's public record on one GPU type."""
    return f"models/{folder}/{gpu_type.lower()}/public-record.html"


def record_row_path(row: RecordRow) -> str:
    """A published run's row on its model's public-record page."""
    return f"{row.page}#{row.anchor}"


@dataclass
class RecordPage:
    """One page of a model's record on one GPU type: its rows in the table's order, and the paths of all pages."""

    path: str
    rows: list[RecordRow]
    page_paths: list[str] = field(default_factory=list)


def sweep_of(row: RecordRow) -> str | None:
    return row.run.derivation.sweep if row.run.derivation else None


def record_pages(folder: str, gpu_type: str, rows: list[RecordRow]) -> list[RecordPage]:
    """The record of a model on one GPU type as pages, each row given its page. A sweep's rows stay on one page
    (its plot and table beside its rows): whole sweeps, then single runs, fill each page in the table's order up to
    RECORD_PAGE_ROWS rows and RECORD_PAGE_SWEEPS sweeps."""
    units: dict[str, list[RecordRow]] = {}  # a sweep's rows, or one row alone, keyed in the table's order
    for row in rows:
        units.setdefault(sweep_of(row) or row.entry.slug, []).append(row)
    groups: list[list[list[RecordRow]]] = [[]]
    for unit in units.values():
        page = groups[-1]
        sweeps = sum(len({row.gpus for row in u}) >= MIN_POINTS for u in (*page, unit))
        if page and (sum(map(len, page)) + len(unit) > RECORD_PAGE_ROWS or sweeps > RECORD_PAGE_SWEEPS):
            groups.append([])
        groups[-1].append(unit)
    first = record_path(folder, gpu_type)
    paths = [first if n == 0 else first.replace(".html", f"-{n + 1}.html") for n in range(len(groups))]
    order = {row.entry.slug: index for index, row in enumerate(rows)}
    pages = []
    for path, group in zip(paths, groups, strict=True):
        paged = sorted((replace(row, page=path) for unit in group for row in unit), key=lambda r: order[r.entry.slug])
        pages.append(RecordPage(path, paged, paths))
    return pages


def hardware_order(catalog: Catalog) -> Callable[[str], tuple[int, str]]:
    """A sort key of GPU types: hardware/gpus.yaml's order (H100, H200, B200, ...), then any other by name."""
    order = {gpu_type: index for index, gpu_type in enumerate(catalog.tables.gpus)}
    return lambda gpu_type: (order.get(gpu_type, len(order)), gpu_type)


def model_page_path(folder: str) -> str:
    return f"models/{folder}/index.html"


def _order(row: RecordRow) -> tuple:
    run = row.run
    return (run.engine, row.entry.entry.gpu.count, run.precision, run.seq_length, row.entry.slug)


def record_rows(catalog: Catalog, entries: list[SummaryEntry]) -> list[RecordRow]:
    """The rows of one table, in a fixed order that is not a ranking."""
    rows = []
    for entry in entries:
        if entry.entry.published is None:
            continue
        _, findings = check_published(entry.entry, catalog.tables)
        disagreement = next((f.message for f in findings if f.field == AGREEMENT_FIELD), None)
        rows.append(RecordRow(entry, published_figures(entry.entry, catalog.tables), disagreement))
    return sorted(rows, key=_order)


def record_audits(catalog: Catalog) -> dict[str, AuditReport]:
    """The record's evidence levels, as `openrecipes audit` gives every published entry: no logs, author-reported,
    or audited where the source reviewed it (MLPerf's closed division)."""
    return {entry.slug: AuditReport(entry.path, evidence_level(entry.entry)) for entry in catalog.record}


@dataclass(frozen=True)
class ScalingPoint:
    """One run on a model page's plot of tokens/s per GPU and MFU against GPU count."""

    entry: CatalogEntry
    gpu_type: str
    gpus: int
    precision: str
    engine: str
    tokens_per_s_per_gpu: float
    mfu: float | None  # against the dense BF16 peak; None where no FLOPs count can be made
    measured: bool  # our measured recipe (True) or an author-reported published run
    href: str  # site path of the run's page (a recipe page, or its row on the record page)
    evidence: str = "author-reported"  # the audit's level (site/pages.py sets each recipe's once audited)

    @property
    def label(self) -> str:
        return f"{self.entry.name} on {self.gpus} {self.gpu_type} ({self.evidence})"


def scaling_points(catalog: Catalog, model: str, rows: list[RecordRow],
                   recipe_page: dict[str, str]) -> list[ScalingPoint]:
    """Our measured recipes of the model and its public record, by GPU type and count. A recipe's MFU is our 6N
    count (figures.mfu, as `validate` checks it); a published run's is catalog/published.py's, with attention."""
    points = []
    for entry in catalog.recipes:
        recipe: Recipe = entry.entry
        if recipe.model != model:
            continue
        spec = catalog.tables.variants.get(recipe.gpu.variant)
        result = recipe.result
        mfu = figures.mfu(result.active_params.count, result.tokens_per_s_per_gpu, spec.peak_bf16_flops) \
            if spec else None
        engine = recipe.stack.framework.split()[0]  # "slime 0.3.0" -> slime
        points.append(ScalingPoint(entry, recipe.gpu.type, recipe.gpu.count, recipe.workload.precision, engine,
                                   result.tokens_per_s_per_gpu, mfu, True, recipe_page[entry.slug]))
    for row in rows:
        summary = row.entry.entry
        points.append(ScalingPoint(row.entry, summary.gpu.type, summary.gpu.count, row.run.precision,
                                   row.run.engine, summary.result.tokens_per_s_per_gpu,
                                   row.figures.mfu_bf16 if row.figures else None, False,
                                   record_row_path(row)))
    in_order = hardware_order(catalog)
    return sorted(points, key=lambda p: (*in_order(p.gpu_type), p.gpus, not p.measured, p.entry.slug))
