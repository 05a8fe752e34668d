"""A model's Plan page as the planner's data, per GPU type and count: the ranked fitting layouts (memory parts,
headroom, held-out interval), notable misses, the catalog's measured recipes and our other runs and the nearest
published entries of the public record beside the planner's prediction of their own layout (or why it cannot make
one). Each runnable row's planned recipe comes from tune (`Offers`), composed through rooms above the planner's."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from openrecipes.catalog.hardware import ReferenceTables, variant_id
from openrecipes.catalog.store import Catalog, SummaryEntry
from openrecipes.engines.registry import PLANNER_DEFAULT, engine_of_framework
from openrecipes.errors import UserError
from openrecipes.plan.accuracy import allocator_gib
from openrecipes.plan.calibrate import measured_point, reference_points, request_of
from openrecipes.plan.constants import calibration, calibration_document
from openrecipes.plan.export_model import (
    CalibrationRow,
    ExportedMargin,
    FittingRow,
    MeasuredRecipe,
    MeasuredRun,
    MissRow,
    ModelPlanExport,
    PlannedRecipeOffer,
    PlanTable,
    PredictedLayout,
    PublishedNeighbour,
    SkippedSize,
    TableData,
)
from openrecipes.plan.fitted_on import fitted_slugs, is_fitted
from openrecipes.plan.layouts import EngineName
from openrecipes.plan.points import MeasuredPoint, reference_rows
from openrecipes.plan.predict import PlanRequest, Prediction, context, predict, predict_layout
from openrecipes.plan.public_record import Compared
from openrecipes.plan.public_record import compared as record_compared
from openrecipes.plan.trust import memory_margin, stored_points
from openrecipes.plan.words import describe

# Fitting layouts shown per table, best predicted tokens/s first (predict's order).
PLAN_TOP = 15
PLANNED_SIZES_AT_FULL_LENGTH = 4  # GPU types and counts a page shows PLAN_TOP rows of each
# Layouts that do not fit shown under them: the fastest misses and the closest ones (least memory).
CLOSEST_MISSES = 2
FASTEST_MISSES = 3
# Measured recipes shown per table (the fastest); the rest are on the leaderboard.
MEASURED_SHOWN = 10
# A GPU count always planned besides the catalog's: one node, cheap to enumerate for any model.
ONE_NODE = 8
# Published entries of the public record shown beside each table, the nearest first.
NEAREST_PUBLISHED = 3


@dataclass(frozen=True)
class Settings:
    """The workload and engine a model's tables are planned for: those of most of its recipes."""

    row_tokens: int = 8192
    global_batch: int = 128
    engine: EngineName = PLANNER_DEFAULT.name
    grad_reduce_bf16: bool = False

    def request(self, model: str, gpu_type: str, gpus: int) -> PlanRequest:
        return PlanRequest(model, gpu_type, gpus, self.row_tokens, self.global_batch, self.engine,
                           self.grad_reduce_bf16)

    @property
    def label(self) -> str:
        grads = "BF16" if self.grad_reduce_bf16 else "FP32"
        return (f"{self.engine.capitalize()}, {self.row_tokens:,}-token rows, global batch {self.global_batch}, "
                f"{grads} gradient buffers")


def model_settings(catalog: Catalog, model: str) -> Settings:
    counts = Counter(Settings(r.row_tokens, r.global_batch, r.engine, r.grad_reduce_bf16)
                     for r in (request_of(e.entry) for e in catalog.recipes if e.entry.model == model))
    if not counts:
        return Settings()
    return max(counts, key=lambda s: (counts[s], -s.row_tokens, s.engine == PLANNER_DEFAULT.name, s.grad_reduce_bf16))


def priced_gpu_types(tables: ReferenceTables) -> list[str]:
    """GPU types with an instance price, in hardware/gpus.yaml's order."""
    priced = {row.gpu for row in tables.instances.values()}
    return [gpu for gpu in tables.gpus if gpu in priced]


def plan_counts(catalog: Catalog, model: str) -> list[int]:
    """The GPU counts of the model's full recipes, and one node. Published summaries' counts are left out: they
    carry no layout to compare, and the largest (GLM at 128 or 256 GPUs) take the planner 10-20 s each."""
    return sorted({e.entry.gpu.count for e in catalog.recipes if e.entry.model == model} | {ONE_NODE})


def published_entries(catalog: Catalog, model: str) -> list[SummaryEntry]:
    """The model's entries in the public record with a typed layout (those the planner is held against)."""
    return [e for e in catalog.record if e.entry.model == model and e.entry.published is not None]


def plan_models(catalog: Catalog) -> list[str]:
    """The models with a model card and recipes or published entries: each gets plans/<model>.json."""
    with_runs = {e.entry.model for e in catalog.recipes} | {e.entry.model for e in catalog.record
                                                             if e.entry.published is not None}
    return sorted(with_runs & set(catalog.tables.models))


@dataclass(frozen=True)
class Scope:
    """What a model's page plans: the workload and engine, the GPU types and counts, and why, in words."""
    settings: Settings
    sizes: list[tuple[str, int]]  # (GPU type, count), in table order
    planned_for: str


def _published_settings(entry: SummaryEntry) -> Settings | None:
    run = entry.entry.published
    assert run is not None
    if run.global_batch is None:  # a torchtitan local batch: the global batch depends on the layout
        return None
    return Settings(run.seq_length, run.global_batch, engine_of_framework(run.engine).name)


def plan_scope(catalog: Catalog, model: str) -> Scope:
    """A model with recipes is planned as its recipes run, at their GPU counts and one node, on every priced GPU
    type; a model with only published entries at their GPU types and counts, with the workload most of them use."""
    tables = catalog.tables
    if any(e.entry.model == model for e in catalog.recipes):
        counts = plan_counts(catalog, model)
        return Scope(model_settings(catalog, model), [(t, n) for t in priced_gpu_types(tables) for n in counts],
                     f"the GPU counts of its recipes and one node ({', '.join(map(str, counts))} GPUs) on every GPU "
                     "type with an instance price")
    entries = published_entries(catalog, model)
    workloads = Counter(s for s in map(_published_settings, entries) if s is not None)
    settings = max(workloads, key=lambda s: (workloads[s], -s.row_tokens, s.engine == PLANNER_DEFAULT.name),
                   default=Settings())
    order = {gpu_type: index for index, gpu_type in enumerate(tables.gpus)}
    sizes = sorted({(e.entry.gpu.type, e.entry.gpu.count) for e in entries},
                   key=lambda size: (order.get(size[0], len(order)), size))
    return Scope(settings, sizes, f"the GPU types and counts of its {len(entries)} published entries (no recipe "
                 f"yet), with the workload {workloads[settings]} of them use")


def rows_shown(sizes: int) -> int:
    """Fitting layouts a table shows: PLAN_TOP, fewer where a page holds many GPU types and counts (a record model
    planned at every size its entries ran), so that the page stays within a phone's budget."""
    return PLAN_TOP if sizes <= PLANNED_SIZES_AT_FULL_LENGTH else max(4, PLAN_TOP * 4 // sizes)


def plan_command(request: PlanRequest) -> str:
    """The `openrecipes plan` command line that asks this request (its defaults left out)."""
    parts = [f"openrecipes plan {request.model} --gpu {request.gpu_type} --gpus {request.gpus} --engine "
             f"{request.engine}"]
    parts += [f"--row-tokens {request.row_tokens}"] if request.row_tokens != 8192 else []
    parts += [f"--global-batch {request.global_batch}"] if request.global_batch != 128 else []
    parts += ["--grad-reduce-bf16"] if request.grad_reduce_bf16 else []
    parts += [f"--kernels {','.join(request.kernels)}"] if request.kernels else []
    parts += [f"--attention {request.attention}"] if request.attention else []
    parts += [f"--float8 {request.float8}"] if request.float8 else []
    parts += ["--float8 measured"] if request.search.float8 == "measured" and not request.float8 else []
    return " ".join(parts)


def _layout_key(row: PredictedLayout) -> tuple[str, str, float]:
    return row.label, row.recompute, row.offload_fraction


def _distinct(rows: list[PredictedLayout], count: int) -> list[PredictedLayout]:
    first: dict[tuple[str, str, float], PredictedLayout] = {}
    for row in rows:
        first.setdefault(_layout_key(row), row)
    return list(first.values())[:count]


@dataclass(frozen=True)
class RankedTable:
    """A table and the predicted tokens/s of all its fitting layouts (shown or not), to rank a measured layout."""
    data: TableData
    fitting_tokens: list[float]


# A table's planned recipes by the index of their row (tune composes them, through rooms above the planner's).
Offers = Callable[[PlanRequest, list[Prediction], int], dict[int, PlannedRecipeOffer]]


def table(request: PlanRequest, tables: ReferenceTables, top: int = PLAN_TOP, offers: Offers | None = None
          ) -> RankedTable:
    """One GPU type and count: the ranked fitting layouts and the notable misses, as `plan --json` objects."""
    ranked = predict(request, tables)
    fitting = [p for p in ranked if p.fits]
    not_fitting = ranked[len(fitting):]
    # a page of many sizes shows fewer rows of each, and one miss of each kind beside layouts that fit (where none
    # fits, the misses are the table, and all of them show)
    closest_count, fastest_count = (CLOSEST_MISSES, FASTEST_MISSES) if top >= PLAN_TOP or not fitting else (1, 1)
    # With nothing fitting, the closest misses say how far off the count is; otherwise the fastest misses say
    # what stops the layouts that would win, and the two closest show where the memory boundary lies.
    closest = [MissRow(**dict(row), note="closest to fitting") for row in _distinct(
        [p.exported() for p in not_fitting[:50]], closest_count if fitting else closest_count + fastest_count)]
    best = fitting[0].tokens_per_s_per_gpu if fitting else float("inf")
    faster = [p.exported() for p in sorted(not_fitting, key=lambda p: -p.tokens_per_s_per_gpu)[:50]
              if p.tokens_per_s_per_gpu > best]
    notable = [MissRow(**dict(row), note="faster than #1") for row in _distinct(faster, fastest_count)]
    shown = {_layout_key(row) for row in notable}
    notable += [row for row in closest if _layout_key(row) not in shown]
    recipes = offers(request, fitting, top) if offers else {}
    rows = [FittingRow(**dict(p.exported()), planned_recipe=recipes.get(i)) for i, p in enumerate(fitting[:top])]
    data = TableData(valid=len(ranked), fitting=len(fitting), capacity_gib=ranked[0].capacity_gib, rows=rows,
                     misses=notable)
    return RankedTable(data, [round(p.tokens_per_s_per_gpu, 1) for p in fitting])


def _rank(ranked: RankedTable, prediction: PredictedLayout) -> int | None:
    """1-based rank among the table's fitting layouts (by predicted tokens/s); None when it does not fit."""
    if not prediction.fits:
        return None
    return 1 + sum(1 for t in ranked.fitting_tokens if t > prediction.tokens_per_s_per_gpu)


def _compared(point: MeasuredPoint, request: PlanRequest, ranked: RankedTable,
              tables: ReferenceTables) -> dict[str, Any]:
    """The planner's prediction of a measured point's own layout, and where it ranks in the table: the fields
    MeasuredRecipe and MeasuredRun share."""
    prediction = predict_layout(context(point.request, tables), point.layout).exported()
    # the same request on the same part: a table asked for by type plans the type's default variant
    default = variant_id(tables.gpus[request.gpu_type], tables)
    same = replace(point.request, variant=point.request.variant or default) == replace(
        request, variant=request.variant or default)
    return {"prediction": prediction, "same_settings": same, "rank": _rank(ranked, prediction) if same else None,
            "allocator_gib": round(allocator_gib(prediction.memory_gib, calibration().runtime_reserve_gib), 2)}


def _measured(catalog: Catalog, request: PlanRequest, ranked: RankedTable,
              errors: dict[str, float]) -> tuple[list[MeasuredRecipe], int]:
    entries = sorted((e for e in catalog.recipes if e.entry.model == request.model
                      and e.entry.gpu.type == request.gpu_type and e.entry.gpu.count == request.gpus),
                     key=lambda e: (-e.entry.result.tokens_per_s_per_gpu, e.slug))
    rows, fitted = [], fitted_slugs()
    for entry in entries[:MEASURED_SHOWN]:
        measured = entry.entry.result.tokens_per_s_per_gpu
        try:
            compared = _compared(measured_point(entry.slug, entry.entry), request, ranked, catalog.tables)
        except UserError as refused:
            compared = {"prediction": None, "error": str(refused)}
        held_out = errors.get(entry.slug)
        if not is_fitted(entry.slug, fitted) and compared["prediction"] is not None:  # never fitted on: held out
            held_out = round(compared["prediction"].tokens_per_s_per_gpu / measured - 1, 4)
        rows.append(MeasuredRecipe(slug=entry.slug, measured=measured, held_out_error=held_out, **compared))
    return rows, len(entries)


def _runs(catalog: Catalog, request: PlanRequest, ranked: RankedTable,
          errors: dict[str, float]) -> list[MeasuredRun]:
    """Our own runs of this model on this many GPUs of this type that no recipe holds, fastest first."""
    recipes = {entry.slug for entry in catalog.recipes}
    points = reference_points()
    rows = []
    for row in reference_rows():
        if ("log" not in row or row["name"] in recipes or "layers" in row  # a reduced-depth run is not the model's
                or (row["model"], row["gpu"], row["gpus"]) != (request.model, request.gpu_type, request.gpus)):
            continue
        point = points[row["name"]]
        rows.append(MeasuredRun(
            name=row["name"], measured=row["tokens_per_s_per_gpu"], memory_gib=row["memory_gib"], log=row["log"],
            held_out_error=errors.get(row["name"]), label=describe(point.layout),
            **_compared(point, request, ranked, catalog.tables)))
    return sorted(rows, key=lambda r: (-r.measured, r.name))


def _release(engine_version: str) -> tuple[int, ...]:
    """When an entry's software was released, as far as its version says: NeMo container YY.MM[.patch], the
    dgxc-benchmarking release vYY.MM[.patch] it ran as, or the date torchtitan's versions carry (YYYY/MM/DD); ()
    where none is written."""
    date = re.search(r"\((\d{4})/(\d{2})/(\d{2})\)", engine_version)
    if date:
        return tuple(map(int, date.groups()))
    container = re.search(r"(?:container |dgxc-benchmarking v)(\d{2})\.(\d{2})(?:\.(\d+))?", engine_version)
    if container:
        year, month, patch = container.groups()
        return 2000 + int(year), int(month), int(patch or 0)
    return ()


def _neighbour(entry: SummaryEntry, row: Compared) -> PublishedNeighbour:
    run = entry.entry.published
    assert run is not None
    return PublishedNeighbour(
        slug=entry.slug, name=entry.name, gpu_type=row.gpu_type, gpus=row.gpus, engine=run.engine,
        engine_version=run.engine_version, task=run.task, precision=row.precision, seq_length=run.seq_length,
        layout=row.layout, published=row.published, predicted=row.predicted, held_out=row.held_out,
        held_out_error=None if row.error is None else round(row.error, 4), low=row.low, high=row.high,
        reason=row.reason)


def nearest_published(entries: list[SummaryEntry], rows: dict[str, Compared], gpu_type: str,
                      gpus: int) -> list[PublishedNeighbour]:
    """The published entries nearest to `gpus` x `gpu_type`: the same GPU type first, then the nearest GPU count
    (by the ratio of counts), then the newest release."""
    def distance(entry: SummaryEntry) -> tuple:
        run = entry.entry.published
        assert run is not None
        release = _release(run.engine_version)
        newest_first = (not release, tuple(-part for part in release))  # an entry of unknown release last
        return (entry.entry.gpu.type != gpu_type, abs(math.log(entry.entry.gpu.count / gpus)), newest_first,
                entry.slug)

    return [_neighbour(e, rows[e.slug]) for e in sorted(entries, key=distance)[:NEAREST_PUBLISHED]]


def _calibration_rows() -> list[CalibrationRow]:
    return [CalibrationRow(name=name, value=f"{row['value']:.4g}", applies_to=row["applies_to"])
            for name, row in calibration_document()["fitted"].items()]


def model_plan(catalog: Catalog, model: str, stamp: str, offers: Offers | None = None) -> ModelPlanExport:
    """Everything one model's Plan page shows, with `stamp` as its fingerprint (tune's export writes it empty and
    seals the file) and each table's planned recipes from `offers` (none without it)."""
    tables = catalog.tables
    scope = plan_scope(catalog, model)
    settings = scope.settings
    errors = {p.name: round(p.error, 4) for p in stored_points()}
    published = published_entries(catalog, model)
    compared = {row.slug: row for row in record_compared(catalog, model)}
    planned, skipped = [], []
    top = rows_shown(len(scope.sizes))
    for gpu_type, gpus in scope.sizes:
        request = settings.request(model, gpu_type, gpus)
        nearest = nearest_published(published, compared, gpu_type, gpus)
        try:
            ctx = context(request, tables)
        except UserError as error:
            skipped.append(SkippedSize(gpu_type=gpu_type, gpus=gpus, reason=str(error), published=nearest))
            continue
        ranked = table(request, tables, top, offers)
        measured, total = _measured(catalog, request, ranked, errors)
        instance = min((n for n, row in tables.instances.items() if row.gpu == gpu_type), default=None)
        planned.append(PlanTable(gpu_type=gpu_type, variant=ctx.links.variant, gpus=gpus,
                                 command=f"{plan_command(request)} --top {top}", instance=instance,
                                 usd_per_gpu_hour=ctx.usd_per_gpu_hour, data=ranked.data, measured=measured,
                                 measured_total=total, runs=_runs(catalog, request, ranked, errors), published=nearest))
    margin = memory_margin(settings.engine)
    return ModelPlanExport(fingerprint=stamp, model=model, settings=settings.label,
                           planned_for=scope.planned_for, published_entries=len(published), engine=settings.engine,
                           tables=planned, skipped=skipped, calibration=_calibration_rows(),
                           memory_margin=ExportedMargin(engine=margin.engine, margin=margin.margin, basis=margin.basis))
