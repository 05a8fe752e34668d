"""Leaderboards: recipes of one model, GPU type and workload, ranked by tokens/s per GPU.

Recipes of different workloads (row tokens, global batch, precision) are never ranked together; summary entries
are never ranked at all (they carry no workload). A model's best per GPU type and its speed-against-cost points are
BF16 figures (published summaries are BF16 runs): an FP8 recipe is ranked on its own precision's board only.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, TypeVar

from openrecipes import figures
from openrecipes.catalog.entry_figures import published_of
from openrecipes.catalog.evidence import EVIDENCE_LEVELS, EvidenceLevel, evidence_level
from openrecipes.catalog.model import Recipe
from openrecipes.catalog.store import Catalog, CatalogEntry, RecipeEntry, SummaryEntry
from openrecipes.errors import UserError

Entry = TypeVar("Entry", bound=CatalogEntry)


BF16 = "bf16"


def ranked_with_bf16(entry: CatalogEntry) -> bool:
    """A published summary or a BF16 recipe: what a model's cross-board summaries compare."""
    return not isinstance(entry.entry, Recipe) or entry.entry.workload.precision == BF16


@dataclass(frozen=True, order=True)
class WorkloadKey:
    row_tokens: int
    global_batch: int
    precision: str

    @property
    def label(self) -> str:
        return f"{self.row_tokens:,}-token SFT rows · global batch {self.global_batch} · {self.precision.upper()}"

    @property
    def slug(self) -> str:
        return f"rows{self.row_tokens}-gb{self.global_batch}-{self.precision}"


@dataclass(frozen=True)
class Board:
    model: str
    gpu_type: str
    workload: WorkloadKey
    ranked: tuple[RecipeEntry, ...]


def workload_of(recipe: Recipe) -> WorkloadKey:
    w = recipe.workload
    return WorkloadKey(w.row_tokens, w.global_batch, w.precision)


def rank(entries: list[Entry]) -> list[Entry]:
    """Fastest first; ties go to the cheaper recipe, then the name, so the order is stable."""
    return sorted(entries, key=lambda e: (-e.entry.result.tokens_per_s_per_gpu,
                                          e.entry.result.usd_per_million_tokens, e.slug))


def boards(catalog: Catalog) -> list[Board]:
    groups: dict[tuple[str, str, WorkloadKey], list[RecipeEntry]] = {}
    for entry in catalog.recipes:
        recipe = entry.entry
        groups.setdefault((recipe.model, recipe.gpu.type, workload_of(recipe)), []).append(entry)
    return [Board(model, gpu, workload, tuple(rank(entries)))
            for (model, gpu, workload), entries in sorted(groups.items(), key=lambda kv: kv[0][:3])]


@dataclass(frozen=True)
class GpuBest:
    gpu_type: str
    fastest: CatalogEntry
    cheapest: CatalogEntry

    @property
    def summary_only(self) -> bool:
        return self.fastest.is_summary


def best_per_gpu(catalog: Catalog, model: str) -> list[GpuBest]:
    """Per GPU type: the fastest entry and the cheapest. Full BF16 recipes win over other precisions and over
    summaries of the same GPU type: a summary stands in only where no recipe exists."""
    by_gpu: dict[str, list[CatalogEntry]] = {}
    for entry in catalog.entries:
        if entry.entry.model == model:
            by_gpu.setdefault(entry.entry.gpu.type, []).append(entry)
    out = []
    for gpu_type, entries in sorted(by_gpu.items()):
        # BF16 recipes first; a GPU type with only another precision's recipes still shows them, so its board is found
        full = ([e for e in entries if not e.is_summary and ranked_with_bf16(e)]
                or [e for e in entries if not e.is_summary] or entries)
        cheapest = min(full, key=lambda e: (e.entry.result.usd_per_million_tokens is None,  # unpriced summaries last
                                            e.entry.result.usd_per_million_tokens or 0.0, e.slug))
        out.append(GpuBest(gpu_type, rank(full)[0], cheapest))
    return out


def models(catalog: Catalog) -> list[str]:
    return sorted({e.entry.model for e in catalog.entries})


@dataclass(frozen=True)
class Selection:
    """Which entries `list --model/--gpu/--evidence` shows (None: any); a board keeps its ranks when filtered."""

    model: str | None = None
    gpu_type: str | None = None
    evidence: EvidenceLevel | None = None

    def keeps(self, entry: CatalogEntry) -> bool:
        e = entry.entry
        return ((self.model is None or e.model.lower() == self.model.lower())
                and (self.gpu_type is None or e.gpu.type.lower() == self.gpu_type.lower())
                and (self.evidence is None or evidence_level(e) == self.evidence))


# What `list` can show without auditing: `openrecipes audit` re-derives the figures and finds the failed entries.
LISTED_LEVELS: tuple[EvidenceLevel, ...] = tuple(level for level in EVIDENCE_LEVELS if level != "failed")


def selection(catalog: Catalog, model: str | None, gpu_type: str | None, evidence: str | None) -> Selection:
    """The filters asked for, each checked against what the catalog holds (bad input names the known values)."""
    everything = [*catalog.entries, *catalog.planned, *catalog.record]
    for option, value, known in (("--model", model, {e.entry.model for e in everything}),
                                 ("--gpu", gpu_type, {e.entry.gpu.type for e in everything})):
        if value is not None and value.lower() not in {k.lower() for k in known}:
            raise UserError(f"{option} {value}: no entry of the catalog has it; known: "
                            f"{', '.join(sorted(known, key=str.lower))}")
    level = next((known for known in LISTED_LEVELS if known == evidence), None)
    if evidence is not None and level is None:
        raise UserError(f"--evidence {evidence}: one of {', '.join(LISTED_LEVELS)} (`openrecipes audit` finds the "
                        "entries whose figures fail)")
    return Selection(model, gpu_type, level)


def selected_boards(catalog: Catalog, chosen: Selection) -> list[tuple[Board, list[tuple[int, RecipeEntry]]]]:
    """Each board with any chosen recipe, and those recipes with their rank on the whole board."""
    out = []
    for board in boards(catalog):
        kept = [(rank, e) for rank, e in enumerate(board.ranked, start=1) if chosen.keeps(e)]
        if kept:
            out.append((board, kept))
    return out


def published_entries(catalog: Catalog, chosen: Selection) -> list[SummaryEntry]:
    """The published summaries and the public record's entries, never ranked: by model, GPU type, count and slug."""
    return sorted([e for e in (*catalog.summaries, *catalog.record) if chosen.keeps(e)],
                  key=lambda e: (e.entry.model, e.entry.gpu.type, e.entry.gpu.count, e.slug))


def planned_entries(catalog: Catalog, chosen: Selection) -> list[RecipeEntry]:
    """Planned recipes (predictions never run), ranked nowhere: by model, GPU type, count and slug."""
    return sorted([e for e in catalog.planned if isinstance(e, RecipeEntry) and chosen.keeps(e)],
                  key=lambda e: (e.entry.model, e.entry.gpu.type, e.entry.gpu.count, e.slug))


# A view's figures: each figure `list` shows (figures.shown_on("board")) by name, as the entry publishes it or, for a
# computed one, worked out for the default token budget. --json writes them in the view's place of `values`.
Values = dict[str, float | None]


def board_values(entry: CatalogEntry) -> Values:
    return {f.name: published_of(f, entry.entry) for f in figures.shown_on("board")}


def _flat(view: Any) -> dict[str, Any]:
    """A view as --json prints it: one key per field, its figures (`values`) one key each in their place."""
    out: dict[str, Any] = {}
    for field in fields(view):
        value = getattr(view, field.name)
        out.update(value if field.name == "values" else {field.name: value})
    return out


@dataclass(frozen=True)
class BoardRow:
    """One ranked recipe as `list --json` prints it."""

    rank: int
    name: str
    slug: str
    path: str
    evidence: EvidenceLevel
    values: Values
    gpus: int
    layout: str
    highlights: str
    measured: str
    author: str


@dataclass(frozen=True)
class BoardView:
    """One leaderboard as `list --json` prints it: its model, GPU type and workload, fastest first."""

    model: str
    gpu_type: str
    row_tokens: int
    global_batch: int
    precision: str
    recipes: list[BoardRow]


@dataclass(frozen=True)
class SummaryView:
    """A published entry (figures only, never ranked: a summary or the public record's) as `list --json` prints it."""

    slug: str
    path: str
    evidence: EvidenceLevel
    model: str
    gpu_type: str
    gpus: int
    values: Values
    source: str


@dataclass(frozen=True)
class PlannedView:
    """A planned recipe (its figures the planner's prediction, never run) as `list --json` prints it."""

    slug: str
    path: str
    evidence: EvidenceLevel
    model: str
    gpu_type: str
    gpus: int
    values: Values
    layout: str


@dataclass(frozen=True)
class Leaderboards:
    boards: list[BoardView]
    summaries: list[SummaryView]
    planned: list[PlannedView]

    def as_json(self) -> dict[str, list[dict[str, Any]]]:
        """As `list --json` prints it: each entry's figures one key each."""
        return {"boards": [{**_flat(b), "recipes": [_flat(r) for r in b.recipes]} for b in self.boards],
                "summaries": [_flat(s) for s in self.summaries], "planned": [_flat(p) for p in self.planned]}


def leaderboards_view(catalog: Catalog, chosen: Selection) -> Leaderboards:
    """The boards, published entries and planned recipes `list` prints, typed, for `list --json`."""
    views = [BoardView(b.model, b.gpu_type, b.workload.row_tokens, b.workload.global_batch, b.workload.precision, [
        BoardRow(rank, e.name, e.slug, e.path.as_posix(), evidence_level(e.entry), board_values(e),
                 e.entry.gpu.count, e.entry.layout.label, e.entry.layout.highlights, str(e.entry.result.measured),
                 e.entry.author.name)
        for rank, e in kept]) for b, kept in selected_boards(catalog, chosen)]
    summaries = [SummaryView(e.slug, e.path.as_posix(), evidence_level(e.entry), e.entry.model, e.entry.gpu.type,
                             e.entry.gpu.count, board_values(e), e.entry.source)
                 for e in published_entries(catalog, chosen)]
    planned = [PlannedView(e.slug, e.path.as_posix(), evidence_level(e.entry), e.entry.model, e.entry.gpu.type,
                           e.entry.gpu.count, board_values(e), e.entry.layout.label)
               for e in planned_entries(catalog, chosen)]
    return Leaderboards(views, summaries, planned)
