"""The Plan page of each model, read from the planner's exported tables (plans/<model>.json in the catalog root,
written by `openrecipes plan export --out plans`): the site renders them and never runs the predictor.

The page answers first (per GPU type and count: the best predicted layout with its held-out range, the best
measured recipe or run beside it, and the nearest author-reported entry of the public record), then the full tables
(each with the model's nearest published entries beside the planner's held-out prediction of their own layout), then
the calibration.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from pydantic import ValidationError

from openrecipes import figures
from openrecipes.catalog.store import Catalog, CatalogEntry
from openrecipes.errors import UserError
from openrecipes.plan.export_model import (
    FittingRow,
    ModelPlanExport,
    PlannedRecipeOffer,
    PlanTable,
    PredictedLayout,
    PublishedNeighbour,
)

PLANS_FOLDER = "plans"  # in the catalog root
BF16 = "BF16"
EXPORT_FIX = "re-export it with `openrecipes plan export --out plans`"


@dataclass(frozen=True)
class TableView:
    """One exported table as the page shows it: its anchor and where its planned recipes are downloaded."""
    table: PlanTable
    folder: str  # the model section's folder

    @property
    def anchor(self) -> str:
        return f"plan-{self.table.gpu_type.lower()}-{self.table.gpus}"

    def recipe_path(self, offer: PlannedRecipeOffer) -> str:
        """The site path of a row's planned recipe YAML."""
        return f"plan/{self.folder}/{self.anchor}-planned-{offer.rank}.yaml"

    @property
    def precision(self) -> str:
        """The precision of the table's predictions (its best row's; BF16 where nothing is predicted)."""
        rows: list[PredictedLayout] = [*self.table.data.rows, *self.table.data.misses]
        return prediction_precision(rows[0]) if rows else BF16

    @property
    def measured_precision(self) -> str | None:
        """The one precision the predictions of the measured recipes' layouts are made in (None: several)."""
        return one_precision(prediction_precision(p.prediction) for p in self.table.measured if p.prediction)

    @property
    def runs_precision(self) -> str | None:
        """The one precision the predictions of our other runs' layouts are made in (None: several)."""
        return one_precision(prediction_precision(run.prediction) for run in self.table.runs)


def one_precision(precisions: Iterable[str]) -> str | None:
    """The precision a column of predictions shares, for its header; None where its rows differ (each names its
    own) or it has none."""
    distinct = set(precisions)
    return distinct.pop() if len(distinct) == 1 else None


def published_precision(entries: list[PublishedNeighbour]) -> str | None:
    """The precision of the planner's predictions of published entries' layouts: each is predicted in its entry's
    own precision (plan/public_record.py), so a column shares one only where its entries do."""
    return one_precision(precision_family(entry.precision) for entry in entries if entry.predicted is not None)


def nearest_published(table: PlanTable, precision: str | None) -> PublishedNeighbour | None:
    """The published entry the short answer sets beside a prediction: the export lists them nearest first (same GPU
    type, then count); of those at the table's own GPU type and count, else at the nearest one listed, an entry of
    the prediction's precision comes before one of another precision."""
    if not table.published:
        return None
    nearest = table.published[0]
    for gpu_type, gpus in ((table.gpu_type, table.gpus), (nearest.gpu_type, nearest.gpus)):
        same = [entry for entry in table.published if (entry.gpu_type, entry.gpus) == (gpu_type, gpus)
                and precision_family(entry.precision) == precision]
        if same:
            return same[0]
    return nearest


def training(budget: int, tokens_per_s_per_gpu: float, gpus: int,
             usd_per_gpu_hour: float | None) -> tuple[float, float | None]:
    """Wall hours and $ (None: no priced instance) to train `budget` tokens at a predicted speed on `gpus` GPUs."""
    hours = figures.time_to_train_hours(budget, tokens_per_s_per_gpu, gpus)
    cost = figures.cost_to_train_usd(budget, tokens_per_s_per_gpu, usd_per_gpu_hour) if usd_per_gpu_hour else None
    return hours, cost


def prediction_precision(row: PredictedLayout) -> str:
    """The precision a prediction is made for: torchtitan's float8 training, Megatron's Transformer Engine GEMM
    precision, or BF16."""
    if row.float8:
        return "FP8"
    return row.low_precision.upper() if row.low_precision else BF16


def precision_family(precision: str) -> str:
    """A published precision's family as predictions name theirs: fp8-current-scaling and fp8 are both FP8."""
    return precision.split("-")[0].upper()


@dataclass
class Answer:
    """One GPU type and count in the page's short answer."""
    gpu_type: str
    gpus: int
    anchor: str
    best: FittingRow | None  # the best predicted fitting layout (None: nothing fits)
    measured_name: str | None  # the fastest measured recipe or run on this type and count
    measured_entry: CatalogEntry | None  # its recipe, where it is one
    measured_tokens: float | None
    nearest: PublishedNeighbour | None  # the nearest published entry of the public record (author-reported)
    usd_per_gpu_hour: float | None  # the priced instance's, for the cost of the token budget


@dataclass
class ModelPlan:
    model: str
    path: str
    data: ModelPlanExport | None  # the exported plan (None: no export for this model)
    tables: list[TableView] = field(default_factory=list)
    entries: dict[str, CatalogEntry] = field(default_factory=dict)  # measured recipes by slug, for names and links
    answers: list[Answer] = field(default_factory=list)
    downloads: dict[str, str] = field(default_factory=dict)  # site path -> a planned recipe's YAML
    # published entry slug -> its model's record page on its GPU type, and its row's anchor there
    record_links: dict[str, tuple[str, str]] = field(default_factory=dict)
    # published entry slug -> its source's caveats, quoted from its note (site/record.py)
    caveats: dict[str, list[str]] = field(default_factory=dict)

    @property
    def precision(self) -> str:
        """The precision of the page's predictions, for the sizes the planner could not plan."""
        return self.tables[0].precision if self.tables else BF16

    @cached_property
    def bases(self) -> list[str]:
        """The distinct bases of the page's ranges, in the order the short answer and then the tables first give
        them: each range cell names its basis by number and the page lists them once, so a long basis is written
        once however many rows share it."""
        rows: list[PredictedLayout] = [answer.best for answer in self.answers if answer.best]
        rows += [row for view in self.tables for row in (*view.table.data.rows, *view.table.data.misses)]
        return list(dict.fromkeys(row.interval.basis for row in rows))

    def basis_number(self, row: PredictedLayout) -> int:
        return self.bases.index(row.interval.basis) + 1


def plan_page_path(folder: str) -> str:
    return f"plan/{folder}.html"


def read_plan(root: Path, model: str) -> ModelPlanExport | None:
    """The model's exported plan, or None where none was exported; a file that is not what the export writes (not
    JSON, stale, edited by hand) is a UserError naming the file, the first field that is wrong, and the fix."""
    path = root / PLANS_FOLDER / f"{model}.json"
    if not path.exists():
        return None
    try:
        return ModelPlanExport.model_validate_json(path.read_bytes())
    except ValidationError as error:
        first = error.errors(include_url=False)[0]
        where = ".".join(str(part) for part in first["loc"])
        raise UserError(f"{path}: {where + ': ' if where else ''}{first['msg']}; {EXPORT_FIX}") from None


def _answer(view: TableView, entries: dict[str, CatalogEntry]) -> Answer:
    table = view.table
    candidates = [(row.measured, row.slug, entries.get(row.slug)) for row in table.measured]
    candidates += [(run.measured, run.label, None) for run in table.runs]
    best_measured = max(candidates, key=lambda c: c[0], default=(None, None, None))
    rows = table.data.rows
    best = rows[0] if rows else None
    return Answer(table.gpu_type, table.gpus, view.anchor, best, best_measured[1], best_measured[2], best_measured[0],
                  nearest_published(table, prediction_precision(best) if best else None), table.usd_per_gpu_hour)


def model_plans(catalog: Catalog, sections) -> list[ModelPlan]:
    """The Plan page of every model section that has a model card, from its exported tables."""
    by_slug = {entry.slug: entry for entry in catalog.recipes}
    plans = []
    for section in sections:
        if section.name not in catalog.tables.models:
            continue
        data = read_plan(catalog.root, section.name)
        plan = ModelPlan(section.name, plan_page_path(section.folder), data)
        plan.record_links = {row.entry.slug: (row.page, row.anchor) for rows in section.record.values() for row in rows}
        plan.caveats = {row.entry.slug: row.caveats for rows in section.record.values() for row in rows if row.caveats}
        if data:
            plan.tables = [TableView(table, section.folder) for table in data.tables]
            for view in plan.tables:
                plan.downloads |= {view.recipe_path(row.planned_recipe): row.planned_recipe.text
                                   for row in view.table.data.rows if row.planned_recipe}
                plan.entries |= {row.slug: by_slug[row.slug] for row in view.table.measured if row.slug in by_slug}
            plan.answers = [_answer(view, plan.entries) for view in plan.tables]
        plans.append(plan)
    return plans
