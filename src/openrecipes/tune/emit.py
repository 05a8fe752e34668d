"""A predicted torchtitan layout written as a runnable recipe (`status: planned`): from a plan to `openrecipes run`.

The recipe is the catalog's torchtitan recipe of the model on N GPUs of the type (its stack, workload, rows and
environment) with the chosen layout's fields and its command re-rendered, as `openrecipes tune` composes its arms.
Its result holds the prediction (labelled in `status` and the notes); a planned recipe is ranked nowhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from openrecipes import figures
from openrecipes.atomic import check_output, starts_with
from openrecipes.audit.record import recipe_text, write_recipe
from openrecipes.catalog.hardware import load_reference_tables
from openrecipes.catalog.paths import default_catalog_root, relative_path
from openrecipes.catalog.store import load_recipe
from openrecipes.errors import UserError
from openrecipes.plan.predict import PlanRequest, Prediction, context, predict
from openrecipes.tune.arms import candidate_recipe, rendered_run
from openrecipes.tune.candidates import as_candidate, renderable
from openrecipes.tune.search import find_base

HEADER = ("# Written by `openrecipes plan --emit-recipe`: a PREDICTION, never run (status: planned). Run it with\n"
          "# `openrecipes run` and measure it before trusting its figures; fields: schema/recipe.schema.yaml.\n")


@dataclass(frozen=True)
class PlannedRecipe:
    """A fitting torchtitan layout as a recipe: its rank among those a recipe can run, its prediction, its text."""
    rank: int
    prediction: Prediction
    base_path: Path
    text: str


def runnable_predictions(request: PlanRequest, root: Path | None = None) -> list[Prediction]:
    """The fitting torchtitan layouts a recipe can run (no VPP, even PP split, whole microbatches), best first."""
    tables = load_reference_tables(root)
    return [p for p in predict(request, tables) if p.fits and renderable(p.layout, request.global_batch)]


def base_request(model: str, gpu_type: str, gpus: int, root: Path | None = None) -> tuple[Path, PlanRequest]:
    """The catalog's torchtitan recipe of the model on N x GPU, and the request with its workload."""
    root = Path(root or default_catalog_root()).resolve()
    base_path = find_base(model, gpu_type, gpus, root)
    base = load_recipe(base_path)
    return base_path, PlanRequest(model, gpu_type, gpus, base.workload.row_tokens, base.workload.global_batch,
                                  "torchtitan")


def planned_recipe(base_path: Path, rank: int, prediction: Prediction, root: Path | None = None) -> PlannedRecipe:
    root = Path(root or default_catalog_root()).resolve()
    tables = load_reference_tables(root)
    base = load_recipe(base_path)
    request = PlanRequest(base.model, base.gpu.type, base.gpu.count, base.workload.row_tokens,
                          base.workload.global_batch, "torchtitan")
    candidate = as_candidate(context(request, tables), prediction.layout)
    composed = candidate_recipe(base, candidate, base.result.steps_per_run)
    run = rendered_run(composed, base, tables.models[base.model], prediction.layout.reshard_after_forward)
    layout = composed.layout.model_copy(update={
        "summary": composed.layout.summary.replace("chosen by `openrecipes tune`",
                                                   f"#{rank} predicted by `openrecipes plan`"),
        "highlights": f"planned: {candidate.label}"})
    tokens = round(prediction.tokens_per_s_per_gpu, 1)
    gpu, instance = tables.gpus[base.gpu.type], tables.instances[base.gpu.instance]
    per_gpu_hour = figures.usd_per_gpu_hour(instance.usd_per_hour, instance.gpus)
    steps = base.result.steps_per_run
    result = composed.result.model_copy(update=dict(
        tokens_per_s_per_gpu=tokens,
        usd_per_million_tokens=round(figures.usd_per_million_tokens(per_gpu_hour, tokens), 4),
        step_time_cv_percent=0.0,
        mfu=round(figures.mfu(base.result.active_params.count, tokens, gpu.peak_bf16_flops), 4),
        gpu_hours=round(max(base.gpu.count * steps * prediction.step.total_s / 3600, 0.01), 2),
        gpu_hours_note="predicted: GPUs x steps x predicted step time (no compile warm-up, no start-up)",
        reference_tokens_per_s_per_gpu=None))
    correctness = base.correctness.model_copy(update=dict(
        result="pending", summary="not run: a layout predicted by `openrecipes plan`",
        reference=f"{relative_path(base_path, root)} (the recipe this one is composed from)",
        configuration="not checked", component_tests=[], convergence=None))
    interval = prediction.interval
    notes = (
        f"Planned by `openrecipes plan {base.model} --gpu {base.gpu.type} --gpus {base.gpu.count} --engine torchtitan "
        f"--emit-recipe {rank}`: predicted, not measured. The result's figures are the planner's prediction: "
        f"{tokens:,.1f} tokens/s per GPU "
        f"(held-out range {interval.low:,.0f} to {interval.high:,.0f}: {interval.basis}); "
        f"peak memory {prediction.memory.total_gib:.1f} of {prediction.capacity_gib:.1f} GiB per GPU, headroom "
        f"{prediction.headroom_gib:.1f} GiB against a {prediction.margin_gib:.1f} GiB margin. Stack, workload, rows, "
        f"environment and the result's date come from {relative_path(base_path, root)}. Run it with `openrecipes run`, "
        "then measure it.")
    planned = composed.model_copy(update=dict(
        status="planned", layout=layout, result=result, correctness=correctness, runs=None, run=run,
        notes=notes)).revalidated()
    return PlannedRecipe(rank, prediction, base_path, recipe_text(planned, HEADER))


def emit_recipe(model: str, gpu_type: str, gpus: int, rank: int, out: Path, root: Path | None = None,
                force: bool = False) -> PlannedRecipe:
    """Write the rank-th runnable fitting torchtitan layout of MODEL on N x GPU to `out`, validated; `out` is new
    or a planned recipe this command wrote (`force`: also one in the catalog's recipes/)."""
    check_output(Path(out), "--out", starts_with(HEADER), force)  # before the planner's seconds of work
    base_path, request = base_request(model, gpu_type, gpus, root)
    ranked = runnable_predictions(request, root)
    if not 1 <= rank <= len(ranked):
        raise UserError(f"--emit-recipe {rank}: choose 1..{len(ranked)} (the fitting torchtitan layouts of {model} on "
                        f"{gpus} x {gpu_type} that a recipe can run)")
    planned = planned_recipe(base_path, rank, ranked[rank - 1], root)
    write_recipe(Path(out), planned.text, load_reference_tables(root), ours=starts_with(HEADER), force=force)
    return planned
