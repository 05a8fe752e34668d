"""Page records: what each page of the site shows, derived from the catalog once, before any template runs.

Ranking and best-per-GPU come from openrecipes.catalog.leaderboard; this module only arranges them into pages,
adds the Pareto front and gives every page its stable path.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path, PurePosixPath

from markupsafe import Markup

from openrecipes import figures
from openrecipes.audit.evidence import AuditReport
from openrecipes.audit.review import audit_catalog
from openrecipes.catalog import facts
from openrecipes.catalog.entry_figures import value_of
from openrecipes.catalog.hardware import ModelCard
from openrecipes.catalog.leaderboard import BF16, Board, GpuBest, best_per_gpu, boards, models, ranked_with_bf16
from openrecipes.catalog.model import Recipe
from openrecipes.catalog.store import Catalog, CatalogEntry, RecipeEntry, SummaryEntry
from openrecipes.errors import UserError
from openrecipes.site.plan import training
from openrecipes.site.record import (
    RecordPage,
    RecordRow,
    ScalingPoint,
    hardware_order,
    model_page_path,
    record_audits,
    record_pages,
    record_path,
    record_rows,
    scaling_points,
)
from openrecipes.site.settings import Repository, read_repository, read_token_budget


@dataclass(frozen=True)
class ParetoPoint:
    entry: CatalogEntry
    tokens_per_s_per_gpu: float
    usd_per_million_tokens: float
    gpus: int
    gpu_type: str
    number: int = 0  # the point's number on the plot and in its key, 1 = fastest
    precision: str = BF16  # a recipe's training precision; a published summary's BF16, as the summaries compare

    @property
    def label(self) -> str:
        return f"{self.gpu_type} published summary" if self.entry.is_summary else self.entry.name


def pareto_front(points: list[ParetoPoint]) -> list[ParetoPoint]:
    """The BF16 points no other BF16 point beats on both axes (faster and cheaper), cheapest first: another
    precision's recipes are plotted beside them but never on their front.

    Of several points with equal figures only the first (by slug) is kept: it stands for all of them.
    """
    ordered = sorted((p for p in points if p.precision == BF16),
                     key=lambda p: (p.usd_per_million_tokens, -p.tokens_per_s_per_gpu, p.entry.slug))
    front: list[ParetoPoint] = []
    for point in ordered:
        if not front or point.tokens_per_s_per_gpu > front[-1].tokens_per_s_per_gpu:
            front.append(point)
    return front


def pareto_points(catalog: Catalog, model: str) -> list[ParetoPoint]:
    """Every priced entry of the model, of every precision (each board's plot holds its own recipes), numbered
    fastest first (ties: cheaper, then by slug)."""
    entries = sorted((e for e in catalog.entries if e.entry.model == model
                      and e.entry.result.usd_per_million_tokens is not None),
                     key=lambda e: (-e.entry.result.tokens_per_s_per_gpu, usd_recomputed(catalog, e), e.slug))
    return [ParetoPoint(e, e.entry.result.tokens_per_s_per_gpu, usd_recomputed(catalog, e), e.entry.gpu.count,
                        e.entry.gpu.type, number, e.entry.workload.precision if isinstance(e.entry, Recipe) else BF16)
            for number, e in enumerate(entries, start=1)]


# The one figure whose texts a board ranks by its own digits where two published costs tie (Site.usd_texts).
RANKED_COST = figures.figure("usd_per_million_tokens")


def usd_recomputed(catalog: Catalog, entry: CatalogEntry) -> float:
    """The entry's $ per 1M tokens as pages rank it: at full precision where its instance is priced
    (catalog/entry_figures.py); the entry publishes a price (callers leave unpriced summaries out)."""
    value = value_of(RANKED_COST, entry.entry, catalog.tables)
    if value is None:
        raise ValueError(f"{entry.slug}: publishes no $ per 1M tokens")
    return value


# A leaderboard longer than this continues on further pages, so no page outgrows the 150 KB budget.
BOARD_PAGE_ROWS = 100
# A model's Pareto plot of more points than this is a shared file shown as an image, not inline in every page.
INLINE_PLOT_POINTS = 200


@dataclass
class BoardPage:
    """One page of a leaderboard: its rows from rank start + 1, and the paths of all of the board's pages."""

    board: Board
    path: str
    start: int = 0
    page_paths: list[str] = field(default_factory=list)

    @property
    def title(self) -> str:
        precision = self.board.workload.precision
        return f"Training {self.board.model} on {self.board.gpu_type}" + ("" if precision == BF16 else
                                                                           f" in {precision.upper()}")

    @property
    def csv_path(self) -> str:
        """The whole board, every rank, as CSV (beside its first page)."""
        return self.page_paths[0].removesuffix(".html") + ".csv"

    @property
    def running_path(self) -> str:
        """The board's "Running a recipe" page, written with its best recipe's paths."""
        return self.page_paths[0].removesuffix(".html") + "-running.html"

    @property
    def rows(self) -> tuple[CatalogEntry, ...]:
        return self.board.ranked[self.start:self.start + BOARD_PAGE_ROWS]


def board_pages(board: Board, folder: str) -> list[BoardPage]:
    stem = f"models/{folder}/{board.gpu_type.lower()}/{board.workload.slug}"
    starts = range(0, len(board.ranked), BOARD_PAGE_ROWS)
    paths = [f"{stem}.html" if n == 0 else f"{stem}-{n + 1}.html" for n in range(len(starts))]
    return [BoardPage(board, path, start, paths) for path, start in zip(paths, starts, strict=True)]


@dataclass
class ModelSection:
    """A model on the index and the data every page of that model shares."""

    name: str
    family: str
    folder: str
    notes: list[str]
    notes_source: str
    card: ModelCard
    boards: list[BoardPage] = field(default_factory=list)  # the first page of each board
    pages: list[BoardPage] = field(default_factory=list)  # every page of every board
    best: list[GpuBest] = field(default_factory=list)
    points: list[ParetoPoint] = field(default_factory=list)  # every entry of the model, numbered
    front: list[ParetoPoint] = field(default_factory=list)
    pareto_svg: str = ""  # the Pareto plot as inline SVG, its links relative to the site root (site/build.py)
    record: dict[str, list[RecordRow]] = field(default_factory=dict)  # GPU type -> its public record, never ranked
    record_pages: dict[str, list[RecordPage]] = field(default_factory=dict)  # GPU type -> the record's pages
    scaling: list[ScalingPoint] = field(default_factory=list)  # measured recipes and the record, by GPU count
    scaling_svg: str = ""  # the model page's plot of them, inline SVG like pareto_svg

    @property
    def pareto_shared(self) -> bool:
        """A plot of more points than a page can carry inline is one file of its own that every page shows as an
        image (drawn once, fetched once), each page keying only its own points."""
        return len(self.points) > INLINE_PLOT_POINTS

    @property
    def pareto_file(self) -> str:
        return f"plots/{self.folder}-pareto.svg"

    @property
    def scaling_shared(self) -> bool:
        """The model page's plot of more runs than a page can carry inline: a file of its own, shown as an image."""
        return len(self.scaling) > INLINE_PLOT_POINTS

    @property
    def scaling_file(self) -> str:
        return f"plots/{self.folder}-scaling.svg"

    @property
    def scaling_rows(self) -> list[tuple[ScalingPoint, int]]:
        """The plot's text alternative: every point of an inline plot; of a shared one, the fastest point of each
        GPU type, count, precision and evidence level with how many points it stands for, so the page stays small
        however many runs the model has."""
        if not self.scaling_shared:
            return [(point, 1) for point in self.scaling]
        groups: dict[tuple[str, int, str, str], list[ScalingPoint]] = {}
        for point in self.scaling:
            groups.setdefault((point.gpu_type, point.gpus, point.precision, point.evidence), []).append(point)
        return [(max(group, key=lambda p: p.tokens_per_s_per_gpu), len(group)) for group in groups.values()]

    def key_points(self, entries=None) -> list[ParetoPoint]:
        """The points a page's plot key lists: every point of an inline plot; of a shared one, the given entries'
        (a board page's rows) or else the front."""
        if not self.pareto_shared:
            return self.points
        if entries is None:
            return self.front
        slugs = {entry.slug for entry in entries}
        return [point for point in self.points if point.entry.slug in slugs]

    @property
    def path(self) -> str:
        """The model's page: its card, its runs by GPU count and type, and links to its boards and record."""
        return model_page_path(self.folder)

    @property
    def gpu_types(self) -> list[str]:
        """Every GPU type with a recipe, a summary or a published run of the model, in the index's order."""
        types = [b.gpu_type for b in self.best]
        return types + [gpu_type for gpu_type in self.record if gpu_type not in types]

    def best_on(self, gpu_type: str) -> GpuBest | None:
        return next((b for b in self.best if b.gpu_type == gpu_type), None)

    def record_path(self, gpu_type: str) -> str | None:
        """The page of the model's public record on this GPU type, where it has one."""
        return record_path(self.folder, gpu_type) if gpu_type in self.record else None

    def recipe_count(self, gpu_type: str) -> int:
        return sum(len(p.board.ranked) for p in self.boards if p.board.gpu_type == gpu_type)

    def board_for(self, gpu_type: str) -> BoardPage | None:
        """The GPU type's board holding its fastest recipe (a GPU type may have several workloads)."""
        best = self.best_on(gpu_type)
        if best is None or best.summary_only:
            return None
        return next(p for p in self.boards if best.fastest in p.board.ranked)


@dataclass(frozen=True)
class FigureCell:
    """One figure of a ranked recipe on its board: the value its column sorts by, and its text."""

    figure: figures.FigureSpec
    value: float | None
    text: str


@dataclass
class Site:
    catalog: Catalog
    sections: list[ModelSection]
    board_of: dict[str, tuple[BoardPage, int]]  # recipe slug -> the board page listing it and its 1-based rank
    repository: Repository | None = None  # where "Repository" and "view source" links point (site.yaml)
    usd_texts: dict[str, str] = field(default_factory=dict)  # slug -> $ per 1M tokens as shown
    usd_values: dict[str, float] = field(default_factory=dict)  # slug -> $ per 1M tokens to sort and compare by
    audits: dict[str, AuditReport] = field(default_factory=dict)  # entry slug -> its audit, once per build
    token_budget: int = 1_000_000_000  # the tokens time-to-train and cost are worked out for (site.yaml)
    # A note line as HTML, by (page folder, text): a model's notes stand on every one of its recipe pages, and a
    # line's links depend only on the folder it is read from.
    note_lines: dict[tuple[str, str], Markup] = field(default_factory=dict)

    @cached_property
    def recipe_by_path(self) -> dict[str, RecipeEntry]:
        """Every recipe by its repository path, for the notes' links: one lookup each, not a scan of the catalog."""
        return {entry.path.as_posix(): entry for entry in self.catalog.recipes}

    def section(self, model: str) -> ModelSection:
        return next(s for s in self.sections if s.name == model)

    def evidence(self, entry: CatalogEntry) -> str:
        """The entry's evidence level, computed by `openrecipes audit` for this build."""
        return self.audits[entry.slug].evidence

    @property
    def board_gpu_types(self) -> list[str]:
        """The GPU types with a leaderboard, in hardware/gpus.yaml's order: the index's GPU-type filter."""
        present = {p.board.gpu_type for s in self.sections for p in s.boards}
        return [gpu_type for gpu_type in self.catalog.tables.gpus if gpu_type in present]

    @property
    def board_gpu_counts(self) -> list[int]:
        """Every GPU count a ranked recipe runs on: the index's GPU-count filter."""
        return sorted({e.entry.gpu.count for s in self.sections for p in s.boards for e in p.board.ranked})

    def cheapest_on(self, board_page: BoardPage) -> RecipeEntry:
        """The board's lowest $ per 1M tokens, by the full-precision cost."""
        return min(board_page.board.ranked, key=lambda e: (self.usd_values[e.slug], e.slug))

    def training(self, entry: RecipeEntry) -> tuple[float, float | None]:
        """Wall hours and $ (None: the instance is not priced) to train the token budget at the recipe's speed on
        its GPUs, through figures.py from hardware/instances.yaml's price."""
        recipe = entry.entry
        instance = self.catalog.tables.instances.get(recipe.gpu.instance)
        per_gpu_hour = figures.usd_per_gpu_hour(instance.usd_per_hour, instance.gpus) if instance else None
        return training(self.token_budget, recipe.result.tokens_per_s_per_gpu, recipe.gpu.count, per_gpu_hour)

    @property
    def board_figures(self) -> tuple[figures.FigureSpec, ...]:
        """A board's figure columns: the rates first, the figures worked out for the token budget after the recipe's
        own columns (the template places them)."""
        return figures.shown_on("board")

    def figure_cells(self, entry: RecipeEntry) -> list[FigureCell]:
        """A ranked recipe's figures on its board, in the list's order (figures.shown_on("board")): what each column
        sorts by and shows. The cost sorts at full precision, its text with the digits that rank it within its model;
        a figure worked out for a token budget is worked out for the site's."""
        cells = []
        for figure in self.board_figures:
            value: float | None
            if figure is RANKED_COST:
                value, text = self.usd_values[entry.slug], self.usd_text(entry)
            else:
                value = value_of(figure, entry.entry, self.catalog.tables, self.token_budget)
                shown = figure.board_text or figure.text
                text = figure.missing if value is None else shown(value)
            cells.append(FigureCell(figure, value, text))
        return cells

    def usd_text(self, entry: CatalogEntry) -> str:
        """$ per 1M tokens as shown: ranked digits where costs tie, else as published ("not published" if none)."""
        return self.usd_texts.get(entry.slug) or facts.usd(entry.entry.result.usd_per_million_tokens)

    def link_target(self, path: str, url: Callable[[str], str]) -> str | None:
        """Where a repository path written in a note links: its recipe page (`url` makes a site path relative to the
        page), the address of the file in the repository, or None for a path that is not a file of the catalog."""
        if "\\" in path or path.startswith("/") or ".." in PurePosixPath(path).parts:
            return None
        entry = self.recipe_by_path.get(path)
        if entry is not None:
            return url(recipe_page_path(entry))
        file = (self.catalog.root / path).resolve()
        if self.repository is None or not file.is_file() or not file.is_relative_to(self.catalog.root):
            return None
        return self.repository.file(path)


def recipe_page_path(entry: CatalogEntry) -> str:
    return f"recipes/{entry.slug}.html"


def recipe_yaml_path(entry: CatalogEntry) -> str:
    return f"recipes/{entry.slug}.yaml"


def recipe_yaml_text_path(entry: CatalogEntry) -> str:
    """The YAML's twin ending in .txt, which the site's links open: every static host serves it as plain text to read
    in the browser (a host may send .yaml as a download); the .yaml itself stays, for tools and the Download link."""
    return recipe_yaml_path(entry) + ".txt"


def compare_data_path(entry: CatalogEntry) -> str:
    return f"compare/{entry.slug}.js"


def site_pages(catalog: Catalog) -> Site:
    _require_unique_slugs(catalog)
    by_model: dict[str, list[Board]] = {}
    for board in boards(catalog):
        by_model.setdefault(board.model, []).append(board)
    sections, board_of = [], {}
    record_by_model: dict[str, list[SummaryEntry]] = {}
    for published in catalog.record:
        record_by_model.setdefault(published.entry.model, []).append(published)
    recipe_pages = {entry.slug: recipe_page_path(entry) for entry in catalog.recipes}
    in_hardware_order = hardware_order(catalog)
    # Every model with an entry, a published run or only a card: a card-only model's page says what is known.
    for model in sorted({*models(catalog), *record_by_model, *catalog.tables.models}):
        card = catalog.tables.models[model]
        card_file = catalog.tables.model_files.get(model)
        folder = card_file.stem if card_file else model.lower()
        section = ModelSection(name=model, family=card.family, folder=folder, notes=card.notes,
                               notes_source=card.notes_source, card=card,
                               best=sorted(_cheapest_by_recomputed(catalog, best_per_gpu(catalog, model)),
                                           key=lambda b: in_hardware_order(b.gpu_type)),
                               points=pareto_points(catalog, model))
        section.front = pareto_front(section.points)
        rows = record_rows(catalog, record_by_model.get(model, []))
        order = {row.entry.slug: index for index, row in enumerate(rows)}
        for gpu_type in sorted({row.entry.entry.gpu.type for row in rows}, key=in_hardware_order):
            paged = record_pages(folder, gpu_type, [r for r in rows if r.entry.entry.gpu.type == gpu_type])
            section.record_pages[gpu_type] = paged
            section.record[gpu_type] = sorted((r for p in paged for r in p.rows), key=lambda r: order[r.entry.slug])
        section.scaling = scaling_points(catalog, model, [r for runs in section.record.values() for r in runs],
                                         recipe_pages)
        for board in by_model.get(model, []):
            pages = board_pages(board, folder)
            section.boards.append(pages[0])
            section.pages += pages
            for page in pages:
                for rank, entry in enumerate(page.rows, start=page.start + 1):
                    board_of[entry.slug] = (page, rank)
        sections.append(section)
    site = Site(catalog, sections, board_of, read_repository(catalog.root),
                audits=audit_catalog(catalog) | record_audits(catalog), token_budget=read_token_budget(catalog.root))
    for section in sections:
        # A plot fills only what the audit re-derived: a recipe that only reports its figures is drawn as what it is.
        section.scaling = [replace(point, evidence=site.evidence(point.entry)) for point in section.scaling]
        # Costs that tie at two decimals within a model are shown with the digits that rank them.
        bf16 = [p for p in section.points if p.precision == BF16]  # another precision's cost ranks on its own board
        texts = facts.usd_ranked([(p.entry.entry.result.usd_per_million_tokens, p.usd_per_million_tokens)
                                  for p in bf16])
        for point, text in zip(bf16, texts, strict=True):
            site.usd_texts[point.entry.slug] = text
            site.usd_values[point.entry.slug] = point.usd_per_million_tokens
    for entry in catalog.recipes:  # other precisions' recipes are no speed-against-cost points: their cost as it is
        site.usd_values.setdefault(entry.slug, usd_recomputed(catalog, entry))
    return site


def _cheapest_by_recomputed(catalog: Catalog, best: list[GpuBest]) -> list[GpuBest]:
    """The cheapest of each GPU type by the full-precision cost, so two costs published as $0.05 rank right."""
    out = []
    for gpu in best:
        entries = [e for e in catalog.entries if e.entry.model == gpu.fastest.entry.model
                   and e.entry.result.usd_per_million_tokens is not None
                   and e.entry.gpu.type == gpu.gpu_type and e.is_summary == gpu.cheapest.is_summary
                   and ranked_with_bf16(e) == ranked_with_bf16(gpu.cheapest)]  # FP8 never stands in for BF16
        # no priced entry: the published one stands, shown "not published"
        out.append(replace(gpu, cheapest=min(entries, key=lambda e: (usd_recomputed(catalog, e), e.slug)))
                   if entries else gpu)
    return out


def _require_unique_slugs(catalog: Catalog) -> None:
    seen: dict[str, Path] = {}
    for entry in catalog.entries:
        if entry.slug in seen:
            raise UserError(f"{entry.path} and {seen[entry.slug]} share the permalink '{entry.slug}'; "
                            "rename one (recipes/<model>/<gpu>/<name>.yaml)")
        seen[entry.slug] = entry.path


def relative_url(from_page: str, target: str) -> str:
    """A link from one site path to another that works from file:// and under any prefix on a static host."""
    return "../" * from_page.count("/") + target  # site paths are written normalized: a/b/page.html
