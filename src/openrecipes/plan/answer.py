"""What the catalog already knows about a plan request: which engine runs the model here, the measured recipes of
the same model, GPU type, count and workload, and the published figures of the same model and GPUs.

`plan` reads these beside its predictions: it says which engine a table is for and why, lists a measured recipe
first (marked measured) wherever the planner's best prediction ranks below it, and widens its ranges where a
published figure of the same model on the same GPUs disagrees with it, showing that figure.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace

from openrecipes.catalog.hardware import load_reference_tables, variant_id
from openrecipes.catalog.store import Catalog
from openrecipes.engines.registry import ENGINES, PLANNER_DEFAULT, engine_named
from openrecipes.plan.calibrate import engine_of, measured_point, request_of
from openrecipes.plan.layouts import Layout
from openrecipes.plan.predict import PlanRequest, Prediction
from openrecipes.plan.trust import Interval


@dataclass(frozen=True)
class EngineChoice:
    engine: str
    reason: str


def default_engine(catalog: Catalog, model: str) -> EngineChoice:
    """The engine of most of the model's measured recipes (on a tie, one that runs here); without one, an engine
    whose model the model card names (torchtitan's), else the planner's default (Megatron)."""
    engines = Counter(engine_of(e.entry) for e in catalog.recipes if e.entry.model == model)
    if engines:
        engine, count = max(engines.items(), key=lambda item: (item[1], engine_named(item[0]).runner.runs_here))
        return EngineChoice(engine, f"{engine} runs {count} of the catalog's {sum(engines.values())} measured "
                                    f"recipe(s) of {model}")
    card = catalog.tables.models.get(model)
    named = [candidate for candidate in ENGINES if candidate.model_flags]
    for candidate in named:
        key = next(iter(candidate.model_flags.values()))  # the card's name of the engine's model
        if card is not None and card.architecture.get(key):
            return EngineChoice(candidate.name, f"no measured recipe of {model}; its card names {candidate.name}'s "
                                                f"{card.architecture[key]} model")
    return EngineChoice(PLANNER_DEFAULT.name, f"no measured recipe of {model} and no "
                        f"{' or '.join(candidate.name for candidate in named)} model in its card")


@dataclass(frozen=True)
class Workload:
    row_tokens: int
    global_batch: int
    reason: str


def default_workload(catalog: Catalog, model: str) -> Workload:
    """The workload a request that names none plans, the same for every engine so that one answer compares its
    engines on one workload: the row length and global batch of most of the model's measured recipes; without one,
    8,192-token rows and a global batch of 128."""
    found = Counter((r.row_tokens, r.global_batch) for r in (request_of(e.entry) for e in catalog.recipes
                                                             if e.entry.model == model))
    if not found:
        return Workload(8192, 128, "the planner's default workload")
    (row_tokens, global_batch), count = max(found.items(), key=lambda item: (item[1], item[0]))
    return Workload(row_tokens, global_batch, f"the workload of {count} of its recipes")


@dataclass(frozen=True)
class MeasuredRecipe:
    slug: str
    layout: Layout
    tokens_per_s_per_gpu: float


def _same_part(variant: str, request: PlanRequest) -> bool:
    """A figure answers a request only on the variant asked for (None: the type's default, the rented part)."""
    return variant == (request.variant or variant_id(load_reference_tables().gpus[request.gpu_type],
                                                     load_reference_tables()))


def _plans_precision(request: PlanRequest, layout: Layout, precision: str) -> bool:
    """Whether the request plans a recipe's precision (its layout's float8 scaling, its workload's precision): FP8 is
    a board of its own, so a BF16 request is never answered by an FP8 recipe, nor an FP8 request by a BF16 one
    (torchtitan's `--float8 measured` plans both)."""
    if request.float8 is not None:
        return layout.levers.float8 == request.float8
    if layout.levers.float8 is not None:
        return request.search.float8 != "none"
    return request.low_precision == (None if precision == "bf16" else precision)


def measured_recipes(catalog: Catalog, request: PlanRequest) -> list[MeasuredRecipe]:
    """The catalog's measured recipes that answer this request (model, GPU type and count, workload, engine and
    precision), fastest first."""
    found = []
    for entry in catalog.recipes:
        recipe = entry.entry
        if (recipe.model, recipe.gpu.type, recipe.gpu.count) != (request.model, request.gpu_type, request.gpus) \
                or not _same_part(recipe.gpu.variant, request):
            continue
        asked = request_of(recipe)
        if (asked.row_tokens, asked.global_batch, asked.engine) == (request.row_tokens, request.global_batch,
                                                                     request.engine):
            point = measured_point(entry.slug, recipe)
            if _plans_precision(request, point.layout, recipe.workload.precision):
                found.append(MeasuredRecipe(entry.slug, point.layout, recipe.result.tokens_per_s_per_gpu))
    return sorted(found, key=lambda m: -m.tokens_per_s_per_gpu)


def measured_above(catalog: Catalog, request: PlanRequest, ranked: list[Prediction]) -> list[MeasuredRecipe]:
    """The measured recipes faster than the planner's best fitting prediction: listed above it, marked measured."""
    best = next((p.tokens_per_s_per_gpu for p in ranked if p.fits), 0.0)
    return [m for m in measured_recipes(catalog, request) if m.tokens_per_s_per_gpu > best]


@dataclass(frozen=True)
class PublishedFigure:
    source: str
    tokens_per_s_per_gpu: float
    ratio: float  # the planner's best fitting prediction over the published figure


def published_figures(catalog: Catalog, request: PlanRequest, ranked: list[Prediction]) -> list[PublishedFigure]:
    """The published figures of the same model on the same GPU type and count, beside the planner's best."""
    best = next((p.tokens_per_s_per_gpu for p in ranked if p.fits), None)
    if best is None:
        return []
    return [PublishedFigure(s.entry.source, s.entry.result.tokens_per_s_per_gpu,
                            best / s.entry.result.tokens_per_s_per_gpu)
            for s in catalog.summaries
            if (s.entry.model, s.entry.gpu.type, s.entry.gpu.count) == (request.model, request.gpu_type, request.gpus)
            and _same_part(s.entry.gpu.variant, request)]


def widened(interval: Interval, tokens_per_s: float, published: list[PublishedFigure]) -> Interval:
    """The interval stretched so that, read at the same ratio as the best prediction's, it holds every published
    figure of the same model and GPUs that disagrees with the planner: a known miss the range shows."""
    if not published:
        return interval
    scaled = [tokens_per_s / figure.ratio for figure in published]
    low, high = min(interval.low, *scaled), max(interval.high, *scaled)
    if (low, high) == (interval.low, interval.high):
        return interval
    figures = "; ".join(f"{f.tokens_per_s_per_gpu:,.1f} published ({f.source})" for f in published)
    return replace(interval, low=round(low, 1), high=round(high, 1), constrained=False,
                   basis=f"{interval.basis}; widened to a published figure of this model on these GPUs: {figures}")
