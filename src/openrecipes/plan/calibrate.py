"""Measured points (the catalog's recipes and reference_points.yaml), and the closed-form fits of
calibration.yaml's fitted values.

A fitted value is solved from one measured point with every other constant fixed; the points it was not
fitted on are held out. `openrecipes refresh` writes the fits into calibration.yaml.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from openrecipes.catalog.command import parse_run
from openrecipes.catalog.model import Recipe
from openrecipes.catalog.paths import default_catalog_root
from openrecipes.catalog.store import load_catalog
from openrecipes.engines.levers import UNPULLED, Levers
from openrecipes.engines.registry import RUN_DEFAULT, engine_named
from openrecipes.errors import UserError
from openrecipes.plan.fit import fit
from openrecipes.plan.fitted_on import fitted_slugs, is_fitted
from openrecipes.plan.layouts import Layout, stage_split
from openrecipes.plan.points import MeasuredPoint, SpeedPoint, reduced_depth_name, reference_rows, reference_tables
from openrecipes.plan.predict import Context, PlanRequest, Prediction, context, predict_layout
from openrecipes.plan.words import lever_names

REFERENCE_ENGINE = RUN_DEFAULT.name  # every point of reference_points.yaml is a torchtitan layout


def reference_points() -> dict[str, MeasuredPoint]:
    points = {}
    for row in reference_rows():
        model = reduced_depth_name(row["model"], row["layers"]) if "layers" in row else row["model"]
        request = PlanRequest(model, row["gpu"], row["gpus"], row["row_tokens"], row["global_batch"], REFERENCE_ENGINE,
                              variant=row["variant"])
        lay = row["layout"]
        layout = Layout(engine=REFERENCE_ENGINE, tp=lay["tp"], pp=lay["pp"], vpp=1, cp=lay["cp"], ep=lay.get("ep", 1),
                        etp=1, dp=lay["dp"], stage_layers=_even_stages(_model_layers(model), lay["pp"]),
                        recompute=lay["recompute"], rows_per_microbatch=lay["rows_per_microbatch"],
                        max_tokens_per_gpu=lay["rows_per_microbatch"] * row["row_tokens"] // lay["cp"],
                        levers=RUN_DEFAULT.levers_of(**{name: lay[name] for name in UNPULLED if name in lay}))
        points[row["name"]] = MeasuredPoint(row["name"], request, layout, row.get("tokens_per_s_per_gpu"),
                                            row.get("memory_gib"))
    return points


def _even_stages(layers: int, pp: int) -> tuple[int, ...]:
    stages = stage_split(layers, pp)
    if stages is None:
        raise UserError(f"{pp} pipeline stages for {layers} layers: each stage needs at least one layer")
    return stages


def _stage_layers(recipe: Recipe, layers: int) -> tuple[int, ...]:
    """Layers per pipeline stage: even, or under Megatron's uneven split (--decoder-first/last-pipeline-num-layers)
    the first and last stages take the given counts and the rest are split evenly over the middle stages."""
    split, pp = recipe.layout.layer_split, recipe.layout.pp
    if split is None:
        return _even_stages(layers, pp)
    middle = (layers - split.first - split.last) // (pp - 2) if pp > 2 else 0
    return (split.first, *[middle] * (pp - 2), split.last)


def engine_of(recipe: Recipe) -> str:
    """The planner's engine of a recipe: the one it names (the validator checked its run command starts it)."""
    return recipe.engine


def request_of(recipe: Recipe) -> PlanRequest:
    """The planner's request a recipe answers: its model, GPUs, workload, engine and gradient-buffer precision."""
    return PlanRequest(recipe.model, recipe.gpu.type, recipe.gpu.count, recipe.workload.row_tokens,
                       recipe.workload.global_batch, recipe.engine, levers_of(recipe).grad_reduce_bf16,
                       variant=recipe.gpu.variant)


def levers_of(recipe: Recipe) -> Levers:
    """The recipe's lever block, read by its engine's runner from its layout and run command."""
    return engine_named(recipe.engine).runner.levers_of(recipe, parse_run(recipe.run))


def _model_layers(model: str) -> int:
    card = reference_tables().models.get(model)
    if card is None or card.architecture.get("layers") is None:
        raise UserError(f"unknown: layers of '{model}' (add architecture.layers to its model card)")
    return card.layers


def measured_point(slug: str, recipe: Recipe) -> MeasuredPoint:
    lay = recipe.layout
    request = request_of(recipe)
    layout = Layout(
        engine=request.engine, tp=lay.tp, pp=lay.pp, vpp=lay.vpp, cp=lay.cp, ep=lay.ep, etp=lay.etp, dp=lay.dp,
        stage_layers=_stage_layers(recipe, _model_layers(recipe.model)),
        recompute=lay.recompute.granularity if lay.recompute else "none",
        rows_per_microbatch=lay.rows_per_microbatch, max_tokens_per_gpu=lay.max_tokens_per_gpu,
        levers=levers_of(recipe))
    return MeasuredPoint(slug, request, layout, recipe.result.tokens_per_s_per_gpu)


@lru_cache(maxsize=4)
def measured_points(root: Path | None = None) -> dict[str, MeasuredPoint]:
    """Every full recipe the planner is fitted on (openrecipes.plan.fitted_on; published summaries carry no layout,
    so they cannot be points) and every reference point; a reference point named by a recipe's slug replaces it
    (it adds the measured memory)."""
    catalog, fitted = load_catalog(root or default_catalog_root()), fitted_slugs()
    return {**{entry.slug: measured_point(entry.slug, entry.entry) for entry in catalog.recipes
               if is_fitted(entry.slug, fitted)}, **reference_points()}


def predict_point(point: MeasuredPoint, ctx: Context | None = None) -> Prediction:
    return predict_layout(ctx or context(point.request, reference_tables()), point.layout)


def speed_points(root: Path | None = None) -> list[SpeedPoint]:
    """The measured points with a comparable tokens/s figure: what the fitted values are fitted on. A point that
    pulls a lever is left out: its time effect is the lever's own measured factor (openrecipes.plan.levers). The
    public record's entries the planner can express are points of their engine and GPU type too
    (openrecipes.plan.public_record)."""
    ours = [SpeedPoint(p.slug, p.request, p.layout, p.tokens_per_s_per_gpu, p.memory_gib)
            for p in measured_points(root).values() if p.tokens_per_s_per_gpu and not lever_names(p.layout.levers)]
    return ours + _record_points(root)


@lru_cache(maxsize=4)
def _record_points(root: Path | None) -> list[SpeedPoint]:
    from openrecipes.plan.public_record import record_points

    fitted = fitted_slugs()
    return [point for point in record_points(load_catalog(root or default_catalog_root()))
            if is_fitted(point.slug, fitted)]


def fitted_values(root: Path | None = None) -> dict[str, float]:
    """The fitted values calibration.yaml records: fitted on every speed point at once (openrecipes.plan.fit)."""
    return fit(speed_points(root)).fitted_values()

