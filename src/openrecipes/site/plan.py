"""The Plan page of each model: the planner's predicted layouts per GPU type and count, beside the measured recipes.

Every figure is the planner's (`openrecipes.plan.predict`): the tables come from openrecipes.site.plan_tables
(`predict`'s ranked predictions as their `--json` objects, cached), a measured recipe's prediction is
`predict_layout` of the recipe's own layout.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from openrecipes.catalog.hardware import ReferenceTables
from openrecipes.catalog.store import Catalog, CatalogEntry
from openrecipes.errors import UserError
from openrecipes.plan.accuracy import allocator_gib
from openrecipes.plan.calibrate import MeasuredPoint, measured_point, reference_points, reference_rows, request_of
from openrecipes.plan.constants import calibration, calibration_document
from openrecipes.plan.predict import PlanRequest, context, predict_layout
from openrecipes.plan.trust import stored_points
from openrecipes.site.plan_tables import PLAN_TOP, plan_tables

# Measured recipes shown per table (the fastest); the rest are on the leaderboard.
MEASURED_SHOWN = 10
# A GPU count the site always plans besides the catalog's: one node, cheap to enumerate for any model.
ONE_NODE = 8


@dataclass(frozen=True)
class Settings:
    """The workload and engine a model's tables are planned for: those of most of its recipes."""

    row_tokens: int = 8192
    global_batch: int = 128
    engine: str = "megatron"
    grad_reduce_bf16: bool = False

    def request(self, model: str, gpu_type: str, gpus: int) -> PlanRequest:
        return PlanRequest(model, gpu_type, gpus, self.row_tokens, self.global_batch, self.engine,
                           self.grad_reduce_bf16)

    @property
    def label(self) -> str:
        grads = "BF16" if self.grad_reduce_bf16 else "FP32"
        return (f"{self.engine.capitalize()}, {self.row_tokens:,}-token rows, global batch {self.global_batch}, "
                f"{grads} gradient buffers")


@dataclass
class MeasuredRow:
    entry: CatalogEntry
    prediction: dict | None  # the planner's object for the recipe's own layout (None: it cannot place it)
    error: str | None
    same_settings: bool  # planned with the table's settings, so it has a rank among the table's layouts
    rank: int | None  # 1-based among the fitting layouts, when it fits and shares the settings
    role: str  # its part in calibration.yaml: fitted on it, held out, or not used

    @property
    def ratio(self) -> float | None:
        if not self.prediction or not self.prediction["tokens_per_s_per_gpu"]:
            return None
        return self.entry.entry.result.tokens_per_s_per_gpu / self.prediction["tokens_per_s_per_gpu"]


@dataclass
class RunPoint:
    """One of our measured runs without a recipe (reference_points.yaml own_runs: the tune sweep's layouts)."""
    name: str
    label: str  # the layout as tune names it
    tokens_per_s_per_gpu: float
    memory_gib: float  # torchtitan's peak (max reserved), no runtime reserve
    log: str
    prediction: dict
    allocator_gib: float  # the predicted peak without the runtime reserve: comparable with memory_gib
    same_settings: bool
    rank: int | None
    role: str

    @property
    def ratio(self) -> float:
        return self.tokens_per_s_per_gpu / self.prediction["tokens_per_s_per_gpu"]


@dataclass
class PlanTable:
    gpu_type: str
    gpus: int
    request: PlanRequest
    data: dict  # the cached table: counts, shown rows, misses, the fitting layouts' tokens/s
    instance: str | None
    usd_per_gpu_hour: float | None
    measured: list[MeasuredRow] = field(default_factory=list)
    measured_total: int = 0
    runs: list[RunPoint] = field(default_factory=list)

    @property
    def anchor(self) -> str:
        return f"plan-{self.gpu_type.lower()}-{self.gpus}"

    @property
    def command(self) -> str:
        r = self.request
        parts = [f"openrecipes plan {r.model} --gpu {r.gpu_type} --gpus {r.gpus}"]
        parts += [f"--row-tokens {r.row_tokens}"] if r.row_tokens != 8192 else []
        parts += [f"--global-batch {r.global_batch}"] if r.global_batch != 128 else []
        parts += [f"--engine {r.engine}"] if r.engine != "megatron" else []
        parts += ["--grad-reduce-bf16"] if r.grad_reduce_bf16 else []
        return " ".join(parts + [f"--top {PLAN_TOP}"])


@dataclass
class ModelPlan:
    model: str
    path: str
    settings: Settings
    tables: list[PlanTable]
    skipped: list[str]  # (GPU type, count) pairs the planner refused, with its reason
    calibration: list[dict]


def plan_page_path(folder: str) -> str:
    return f"plan/{folder}.html"


def priced_gpu_types(tables: ReferenceTables) -> list[str]:
    """GPU types with an instance price, in hardware/gpus.yaml's order."""
    priced = {row.gpu for row in tables.instances.values()}
    return [gpu for gpu in tables.gpus if gpu in priced]


def plan_counts(catalog: Catalog, model: str) -> list[int]:
    """The GPU counts of the model's full recipes, and one node. Published summaries' counts are left out: they
    carry no layout to compare, and the largest (GLM at 128 or 256 GPUs) take the planner 10-20 s each."""
    return sorted({e.entry.gpu.count for e in catalog.recipes if e.entry.model == model} | {ONE_NODE})


def _settings_of(entry: CatalogEntry) -> Settings:
    request = request_of(entry.entry)  # the request measured_point plans the recipe with
    return Settings(request.row_tokens, request.global_batch, request.engine, request.grad_reduce_bf16)


def model_settings(catalog: Catalog, model: str) -> Settings:
    counts = Counter(_settings_of(e) for e in catalog.recipes if e.entry.model == model)
    if not counts:
        return Settings()
    return max(counts, key=lambda s: (counts[s], -s.row_tokens, s.engine == "megatron", s.grad_reduce_bf16))


# --- measured points -----------------------------------------------------------------------------------------------

def calibration_roles() -> dict[str, str]:
    """Each measured point's held-out error: predicted with every fitted value refitted without it."""
    return {p.name: f"held-out error {p.error:+.1%}" for p in stored_points()}


def calibration_rows() -> list[dict]:
    """calibration.yaml's fitted values, each with what it applies to (every one is fitted on every point)."""
    return [{"name": name, "value": f"{row['value']:.4g}", "applies_to": row["applies_to"]}
            for name, row in calibration_document()["fitted"].items()]


class _Predictor:
    """Predictions of recipes' own layouts, once per distinct (request, layout) in a build."""

    def __init__(self, tables: ReferenceTables):
        self.tables = tables
        self.contexts: dict = {}
        self.done: dict = {}

    def __call__(self, entry: CatalogEntry) -> tuple[PlanRequest | None, dict | None, str | None]:
        try:
            point = measured_point(entry.slug, entry.entry)
            return point.request, self.predict(point), None
        except UserError as error:
            return None, None, str(error)

    def predict(self, point: MeasuredPoint) -> dict:
        key = (point.request, point.layout)
        if key not in self.done:
            if point.request not in self.contexts:
                self.contexts[point.request] = context(point.request, self.tables)
            self.done[key] = predict_layout(self.contexts[point.request], point.layout).as_json()
        return self.done[key]


def _rank(data: dict, prediction: dict) -> int | None:
    """1-based rank among the table's fitting layouts; None when it does not fit or the table cannot hold it (the
    enumeration plans torchtitan's defaults, eager with resharding, so a compiled or no-reshard layout has none)."""
    if not prediction["fits"] or prediction["compile"] or not prediction["reshard_after_forward"]:
        return None
    tokens = prediction["tokens_per_s_per_gpu"]
    return 1 + sum(1 for t in data["fitting_tokens"] if round(t, 1) > tokens)


def _measured(catalog: Catalog, table: PlanTable, predictor: _Predictor, roles: dict[str, str]) -> None:
    entries = sorted((e for e in catalog.recipes if e.entry.model == table.request.model
                      and e.entry.gpu.type == table.gpu_type and e.entry.gpu.count == table.gpus),
                     key=lambda e: (-e.entry.result.tokens_per_s_per_gpu, e.slug))
    table.measured_total = len(entries)
    for entry in entries[:MEASURED_SHOWN]:
        request, prediction, error = predictor(entry)
        same = request == table.request
        rank = _rank(table.data, prediction) if prediction and same else None
        table.measured.append(MeasuredRow(entry, prediction, error, same, rank,
                                          roles.get(entry.slug, "not used in calibration")))


def _own_runs(catalog: Catalog) -> list[tuple[dict, MeasuredPoint]]:
    """Our own runs that no recipe holds (reference_points.yaml own_runs), each with its measured point."""
    recipes = {entry.slug for entry in catalog.recipes}
    points = reference_points()
    return [(row, points[row["name"]]) for row in reference_rows() if "log" in row and row["name"] not in recipes]


def _runs(table: PlanTable, own_runs: list[tuple[dict, MeasuredPoint]], predictor: _Predictor,
          roles: dict[str, str], reserve_gib: float) -> None:
    """The own runs of this model on this many GPUs of this type, fastest first."""
    for row, point in own_runs:
        if (row["model"], row["gpu"], row["gpus"]) != (table.request.model, table.gpu_type, table.gpus):
            continue
        prediction = predictor.predict(point)
        lay = point.layout
        label = (f"{prediction['label']} · {lay.recompute} recompute · {lay.rows_per_microbatch} row(s) a microbatch · "
                 f"{'torch.compile' if lay.compile else 'eager'}")
        same = point.request == table.request
        table.runs.append(RunPoint(row["name"], label, row["tokens_per_s_per_gpu"], row["memory_gib"], row["log"],
                                   prediction, allocator_gib(prediction["memory_gib"], reserve_gib), same,
                                   _rank(table.data, prediction) if same else None,
                                   roles.get(row["name"], "not used in calibration")))
    table.runs.sort(key=lambda run: (-run.tokens_per_s_per_gpu, run.name))


def model_plans(catalog: Catalog, sections) -> tuple[list[ModelPlan], int]:
    """The Plan page of every model section (its tables, measured points and calibration provenance), and how many
    tables were computed rather than read from the cache."""
    tables = catalog.tables
    gpu_types = priced_gpu_types(tables)
    plans, wanted = [], []
    for section in sections:
        if section.name not in tables.models:
            continue
        settings = model_settings(catalog, section.name)
        plan = ModelPlan(section.name, plan_page_path(section.folder), settings, [], [], calibration_rows())
        for gpu_type in gpu_types:
            for gpus in plan_counts(catalog, section.name):
                request = settings.request(section.name, gpu_type, gpus)
                try:
                    ctx = context(request, tables)
                except UserError as error:
                    plan.skipped.append(f"{gpus} x {gpu_type}: {error}")
                    continue
                instance = min((n for n, row in tables.instances.items() if row.gpu == gpu_type), default=None)
                plan.tables.append(PlanTable(gpu_type, gpus, request, {}, instance, ctx.usd_per_gpu_hour))
                wanted.append(request)
        plans.append(plan)
    computed, fresh = plan_tables(wanted, tables)
    predictor, roles = _Predictor(tables), calibration_roles()
    own_runs, reserve_gib = _own_runs(catalog), calibration().runtime_reserve_gib
    for plan in plans:
        for table in plan.tables:
            table.data = computed[table.request]
            _measured(catalog, table, predictor, roles)
            _runs(table, own_runs, predictor, roles, reserve_gib)
    return plans, fresh
