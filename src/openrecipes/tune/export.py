"""The Plan pages as data: `openrecipes plan export --out DIR` writes one JSON file per model, every figure the
planner's, so that the site renders them without running the predictor.

A model's file holds, per GPU type and count: the ranked fitting layouts (with memory parts, headroom and the
held-out interval), notable layouts that do not fit, the catalog's measured recipes and our other measured runs
beside the planner's prediction of their own layout and their held-out error, the model's nearest published entries
of the public record (author-reported, beside the planner's held-out prediction of their own layout or the reason it
cannot make one), and, for torchtitan tables with a recipe to compose from, each runnable row's planned recipe (the
text `plan --emit-recipe` writes). Each file is sealed with a fingerprint of every input and of its own content
(openrecipes.tune.fingerprint): `refresh --check` fails when a committed one is stale or edited.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path

from openrecipes.atomic import check_output_folder, starts_with, write_output
from openrecipes.catalog.hardware import ReferenceTables, variant_id
from openrecipes.catalog.store import Catalog, RecipeEntry, SummaryEntry, load_recipe
from openrecipes.engines.registry import PLANNER_DEFAULT, engine_named, engine_of_framework
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
from openrecipes.plan.layouts import EngineName
from openrecipes.plan.levers import lever_names
from openrecipes.plan.points import MeasuredPoint, reference_rows
from openrecipes.plan.predict import PlanRequest, Prediction, context, predict, predict_layout
from openrecipes.plan.public_record import Compared
from openrecipes.plan.public_record import compared as record_compared
from openrecipes.plan.trust import memory_margin, stored_points
from openrecipes.tune.candidates import renderable
from openrecipes.tune.emit import plan_command, planned_recipe
from openrecipes.tune.fingerprint import fingerprint, sealed
from openrecipes.tune.search import find_base

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


def _settings_of(entry: RecipeEntry) -> Settings:
    request = request_of(entry.entry)
    return Settings(request.row_tokens, request.global_batch, request.engine, request.grad_reduce_bf16)


def model_settings(catalog: Catalog, model: str) -> Settings:
    counts = Counter(_settings_of(e) for e in catalog.recipes if e.entry.model == model)
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


def command(request: PlanRequest, top: int = PLAN_TOP) -> str:
    return f"{plan_command(request)} --top {top}"


def _layout_key(row: PredictedLayout) -> tuple[str, str, float]:
    return row.label, row.recompute, row.offload_fraction


def _distinct(rows: list[PredictedLayout], count: int) -> list[PredictedLayout]:
    seen, kept = set(), []
    for row in rows:
        if _layout_key(row) not in seen:
            seen.add(_layout_key(row))
            kept.append(row)
        if len(kept) == count:
            break
    return kept


def _planned_recipes(request: PlanRequest, ranked: list[Prediction], root: Path,
                     top: int) -> dict[int, PlannedRecipeOffer]:
    """For a torchtitan table with a recipe to compose from: each shown row's planned recipe, by its index among
    the shown rows (the same text `plan --emit-recipe RANK` writes, RANK among the runnable fitting layouts)."""
    if not engine_named(request.engine).runs_here:
        return {}
    try:
        base_path = find_base(request.model, request.gpu_type, request.gpus, root)
    except UserError:
        return {}
    base = load_recipe(base_path)
    if (base.workload.row_tokens, base.workload.global_batch) != (request.row_tokens, request.global_batch):
        return {}
    # The fitting layouts a recipe can run, in the table's own order (predicted once, not again here).
    runnable_rank = {id(p): rank for rank, p in enumerate(
        (p for p in ranked if renderable(p.layout, request.global_batch)), start=1)}
    found = {}
    for index, p in enumerate(ranked[:top]):
        if id(p) in runnable_rank:
            rank = runnable_rank[id(p)]
            text = planned_recipe(base_path, rank, p, request, root).text
            found[index] = PlannedRecipeOffer(rank=rank, text=text, command=(
                f"{plan_command(request)} --emit-recipe {rank} "
                f"--out {request.model.lower()}-{request.gpu_type.lower()}x{request.gpus}-planned-{rank}.yaml"))
    return found


@dataclass(frozen=True)
class RankedTable:
    """A table and the predicted tokens/s of all its fitting layouts (shown or not), to rank a measured layout."""
    data: TableData
    fitting_tokens: list[float]


def table(request: PlanRequest, tables: ReferenceTables, root: Path, top: int = PLAN_TOP) -> RankedTable:
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
    recipes = _planned_recipes(request, fitting, root, top)
    rows = [FittingRow(**dict(p.exported()), planned_recipe=recipes.get(i)) for i, p in enumerate(fitting[:top])]
    data = TableData(valid=len(ranked), fitting=len(fitting), capacity_gib=ranked[0].capacity_gib, rows=rows,
                     misses=notable)
    return RankedTable(data, [round(p.tokens_per_s_per_gpu, 1) for p in fitting])


def _rank(ranked: RankedTable, prediction: PredictedLayout) -> int | None:
    """1-based rank among the table's fitting layouts (by predicted tokens/s); None when it does not fit."""
    if not prediction.fits:
        return None
    return 1 + sum(1 for t in ranked.fitting_tokens if t > prediction.tokens_per_s_per_gpu)


@dataclass(frozen=True)
class PointPrediction:
    """The planner's prediction of a measured point's own layout, and where it ranks in the table."""
    prediction: PredictedLayout
    same_settings: bool
    rank: int | None
    allocator_gib: float


def _compared(point: MeasuredPoint, request: PlanRequest, ranked: RankedTable,
              tables: ReferenceTables) -> PointPrediction:
    prediction = predict_layout(context(point.request, tables), point.layout).exported()
    # the same request on the same part: a table asked for by type plans the type's default variant
    default = variant_id(tables.gpus[request.gpu_type], tables)
    same = replace(point.request, variant=point.request.variant or default) == replace(
        request, variant=request.variant or default)
    return PointPrediction(prediction, same, _rank(ranked, prediction) if same else None,
                    round(allocator_gib(prediction.memory_gib, calibration().runtime_reserve_gib), 2))


def _measured(catalog: Catalog, request: PlanRequest, ranked: RankedTable,
              errors: dict[str, float]) -> tuple[list[MeasuredRecipe], int]:
    entries = sorted((e for e in catalog.recipes if e.entry.model == request.model
                      and e.entry.gpu.type == request.gpu_type and e.entry.gpu.count == request.gpus),
                     key=lambda e: (-e.entry.result.tokens_per_s_per_gpu, e.slug))
    rows = []
    for entry in entries[:MEASURED_SHOWN]:
        measured = entry.entry.result.tokens_per_s_per_gpu
        held_out = errors.get(entry.slug)
        try:
            compared = _compared(measured_point(entry.slug, entry.entry), request, ranked, catalog.tables)
        except UserError as error:
            rows.append(MeasuredRecipe(slug=entry.slug, measured=measured, held_out_error=held_out, prediction=None,
                                       error=str(error)))
            continue
        rows.append(MeasuredRecipe(slug=entry.slug, measured=measured, held_out_error=held_out,
                                   **vars(compared)))
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
        lay = point.layout
        rows.append(MeasuredRun(
            name=row["name"], measured=row["tokens_per_s_per_gpu"], memory_gib=row["memory_gib"], log=row["log"],
            held_out_error=errors.get(row["name"]),
            label=f"{lay.label} · {lay.recompute} recompute · {lay.rows_per_microbatch} row(s) a "
                  f"microbatch · {'torch.compile' if lay.compile else 'eager'}"
                  + "".join(f" · {name}" for name in lever_names(lay)),
            **vars(_compared(point, request, ranked, catalog.tables))))
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


def model_plan(catalog: Catalog, model: str, stamp: str) -> ModelPlanExport:
    """Everything one model's Plan page shows, with `stamp` as its fingerprint (`export` writes it empty and seals
    the file)."""
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
        ranked = table(request, tables, catalog.root, top)
        measured, total = _measured(catalog, request, ranked, errors)
        instance = min((n for n, row in tables.instances.items() if row.gpu == gpu_type), default=None)
        planned.append(PlanTable(gpu_type=gpu_type, variant=ctx.links.variant, gpus=gpus,
                                 command=command(request, top), instance=instance,
                                 usd_per_gpu_hour=ctx.usd_per_gpu_hour, data=ranked.data, measured=measured,
                                 measured_total=total, runs=_runs(catalog, request, ranked, errors),
                                 published=nearest))
    margin = memory_margin(settings.engine)
    return ModelPlanExport(fingerprint=stamp, model=model, settings=settings.label,
                           planned_for=scope.planned_for, published_entries=len(published), engine=settings.engine,
                           tables=planned, skipped=skipped, calibration=_calibration_rows(),
                           memory_margin=ExportedMargin(engine=margin.engine, margin=margin.margin,
                                                        basis=margin.basis))


def export(catalog: Catalog, out: Path) -> list[Path]:
    """One JSON file per model with recipes or published entries (`plan_models`): `<out>/<model>.json`; `out` is
    new, empty or a folder of them."""
    check_plans_folder(out)
    out.mkdir(parents=True, exist_ok=True)
    stamp = fingerprint(catalog)
    written = []
    for model in plan_models(catalog):
        path = out / f"{model}.json"
        unsealed = model_plan(catalog, model, "").model_dump_json(indent=1) + "\n"
        write_output(path, sealed(unsealed, stamp, model), "--out", PLAN_FILE)
        written.append(path)
    return written


PLAN_FILE = starts_with('{\n "fingerprint": ')  # the first key of every file `export` writes


def check_plans_folder(out: Path) -> None:
    """`out` is new, empty, or a folder of plan files (openrecipes.atomic's rule for folders)."""
    check_output_folder(out, "--out", lambda folder: any(
        PLAN_FILE(path) for path in folder.glob("*.json") if path.is_file() and not path.is_symlink()))
