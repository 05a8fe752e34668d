"""A predicted layout written as a runnable recipe (`status: planned`): from a plan to `openrecipes run` (or, for an
engine whose recipes are printed, `run --dry-run`).

The recipe is the catalog's recipe of the model under the plan's engine (its stack, environment and data source) on
the plan's GPUs, workload and rows (tune/planned_rows.py), with the chosen layout's fields and its command written
again: re-rendered as `openrecipes tune` composes its arms, or the printed command's flags rewritten
(tune/printed_recipe.py). Its result holds the prediction and nothing it did not measure (no run date, CV or
reproductions); a planned recipe is ranked nowhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from openrecipes import figures
from openrecipes.atomic import check_output, starts_with
from openrecipes.audit.record import recipe_text, write_recipe
from openrecipes.catalog.hardware import GpuSpec, ReferenceTables, load_reference_tables, variant_id
from openrecipes.catalog.model import Author, Recipe
from openrecipes.catalog.paths import default_catalog_root, relative_path
from openrecipes.catalog.store import load_catalog, load_recipe
from openrecipes.engines.registry import RUN_DEFAULT, engine_named
from openrecipes.errors import UserError
from openrecipes.plan.pages import plan_command
from openrecipes.plan.predict import PlanRequest, Prediction, context, predict
from openrecipes.plan.score import OURS
from openrecipes.tune.arms import candidate_recipe, rendered_run
from openrecipes.tune.candidates import as_candidate, renderable, runs_on_engine
from openrecipes.tune.planned_rows import planned_rows
from openrecipes.tune.printed_recipe import expressible, printed_recipe
from openrecipes.tune.search import find_base

HEADER = ("# Written by `openrecipes plan --emit-recipe`: a PREDICTION, never run (status: planned). Run it with\n"
          "# `openrecipes run` and measure it before trusting its figures; fields: schema/recipe.schema.yaml.\n")


@dataclass(frozen=True)
class PlannedRecipe:
    """A fitting layout as a recipe: its rank among those a recipe can run, its prediction, its text."""
    rank: int
    prediction: Prediction
    base_path: Path
    text: str


def runnable_predictions(request: PlanRequest, root: Path | None = None) -> list[Prediction]:
    """The fitting layouts a recipe can say and the engine runs, best first: for the engine `openrecipes run`
    starts, no pipeline, no offload and none that tune's DOES_NOT_RUN knows to fail; for a printed engine's, what its
    flag table can express."""
    tables = load_reference_tables(root)
    card = tables.models.get(request.model)
    fitting = predict(request, tables, fitting_only=True)
    if not engine_named(request.engine).runner.runs_here:
        layers = card.layers if card is not None else 0
        return [p for p in fitting if expressible(p.layout, layers)]
    model = card.architecture.get("torchtitan_model") if card is not None else None
    return [p for p in fitting if renderable(p.layout) and runs_on_engine(p.layout, model)]


def emit_base(model: str, gpu_type: str, gpus: int, root: Path | None = None, engine: str | None = None) -> Path:
    """The recipe a planned one is composed from: the catalog's recipe of the model under the engine (default: the
    one `openrecipes run` starts; its stock recipe on N x GPU first) on N x GPU, else on the nearest count of that
    GPU type, else on any GPU (its GPUs are replaced); BF16."""
    root = Path(root or default_catalog_root()).resolve()
    chosen = engine_named(engine) if engine else RUN_DEFAULT
    if chosen.runner.runs_here:
        try:
            return find_base(model, gpu_type, gpus, root)
        except UserError:
            pass
    found = [(entry.entry.gpu.type != gpu_type, abs(entry.entry.gpu.count - gpus), str(entry.path), root / entry.path)
             for entry in load_catalog(root).recipes if entry.entry.model == model
             and entry.entry.engine == chosen.name and entry.entry.workload.precision == "bf16"]
    if not found:
        raise UserError(f"--emit-recipe: the catalog has no {chosen.name} recipe of {model} to take the stack, rows "
                        "and environment from (a planned recipe is composed from one); plan it without "
                        "--emit-recipe, or with another --engine")
    return sorted(found)[0][3]


def network(count: int, per_node: int, gpu_type: str, part: GpuSpec) -> str:
    """The recipe's `stack.network`, from the part's hardware/gpus.yaml links and the GPU count."""
    inside = f"{part.scale_up.link}, {part.scale_up.gb_s:g} GB/s"
    if count <= per_node:
        return f"one node, {count} x {gpu_type} ({inside}); no inter-node traffic"
    return (f"{-(-count // per_node)} nodes of {per_node} x {gpu_type}: {inside} within a node, "
            f"{part.scale_out.fabric} {part.scale_out.gbit_s:g} Gb/s per GPU between nodes")


def retargeted(base: Recipe, base_name: str, request: PlanRequest,
               tables: ReferenceTables) -> tuple[Recipe, str | None]:
    """The base recipe on the request's GPUs and workload (GPU type, count, node size and priced instance, and the
    network they make; row tokens, global batch and the rows of that length), not yet revalidated; with the rows
    file its run reads where that is not the base's."""
    if (base.gpu.type, base.gpu.count) == (request.gpu_type, request.gpus):
        gpu = base.gpu
    else:
        priced = sorted(name for name, row in tables.instances.items() if row.gpu == request.gpu_type)
        if not priced:
            raise UserError(f"--emit-recipe: no priced {request.gpu_type} instance in hardware/instances.yaml to put "
                            "in the recipe; add one")
        per_node = min(request.gpus, tables.instances[priced[0]].gpus)
        spec = tables.gpus[request.gpu_type]  # the part the priced instance rents
        gpu = base.gpu.model_copy(update=dict(type=request.gpu_type, variant=variant_id(spec, tables),
                                              count=request.gpus, per_node=per_node, instance=priced[0],
                                              memory_gb=spec.memory_gb))
    rows = planned_rows(base, request.row_tokens, request.global_batch)
    workload = base.workload.model_copy(update=dict(row_tokens=request.row_tokens, global_batch=request.global_batch,
                                                    dataset=rows.dataset))
    stack = base.stack.model_copy(update=dict(
        network=network(gpu.count, gpu.per_node, gpu.type, tables.variants[gpu.variant]),
        source=f"the versions {base_name} ran on (the recipe this one is composed from); this one has not run"))
    result = base.result.model_copy(update=dict(measured=None, step_time_cv_percent=None))
    return base.model_copy(update=dict(gpu=gpu, author=Author(name=OURS, url=None), workload=workload, stack=stack,
                                       result=result, reproductions=[])), rows.path


def planned_recipe(base_path: Path, rank: int, prediction: Prediction, request: PlanRequest,
                   root: Path | None = None) -> PlannedRecipe:
    root = Path(root or default_catalog_root()).resolve()
    tables = load_reference_tables(root)
    base_name = relative_path(base_path, root)
    original = load_recipe(base_path)
    base, rows_path = retargeted(original, base_name, request, tables)
    same_gpus = (original.gpu.type, original.gpu.count) == (request.gpu_type, request.gpus)
    moved = "" if same_gpus else " (its GPUs replaced)"
    if engine_named(request.engine).runner.runs_here:
        candidate = as_candidate(context(request, tables), prediction.layout)
        composed = candidate_recipe(base, candidate, base.result.steps_per_run)
        composed = composed.model_copy(update=dict(
            run=rendered_run(composed, base, tables.models[base.model], prediction.layout.levers,
                             rows_path),
            layout=composed.layout.model_copy(update={
                "summary": composed.layout.summary.replace("chosen by `openrecipes tune`",
                                                           f"#{rank} predicted by `openrecipes plan`"),
                "highlights": f"planned: {candidate.label}"})))
        run_it = "Run it with `openrecipes run`, then measure it."
    else:
        composed = printed_recipe(base, tables.models[base.model], prediction.layout, rank)
        run_it = ("`openrecipes run --dry-run` prints its command; run it on a cluster with the base recipe's "
                  "training image, then measure it.")
    tokens = round(prediction.tokens_per_s_per_gpu, 1)
    gpu, instance = tables.variants[base.gpu.variant], tables.instances[base.gpu.instance]
    per_gpu_hour = figures.usd_per_gpu_hour(instance.usd_per_hour, instance.gpus)
    steps = base.result.steps_per_run
    result = composed.result.model_copy(update=dict(
        tokens_per_s_per_gpu=tokens,
        usd_per_million_tokens=round(figures.usd_per_million_tokens(per_gpu_hour, tokens), 4),
        mfu=round(figures.mfu(base.result.active_params.count, tokens, gpu.peak_bf16_flops), 4),
        gpu_hours=round(max(figures.gpu_hours(base.gpu.count * steps, prediction.step.total_s), 0.01), 2),
        gpu_hours_note="predicted: GPUs x steps x predicted step time (no compile warm-up, no start-up)",
        reference_tokens_per_s_per_gpu=None,
        window_tokens=figures.window_tokens(*base.result.window, request.global_batch, request.row_tokens)))
    correctness = base.correctness.model_copy(update=dict(
        result="pending", summary="not run: a layout predicted by `openrecipes plan`",
        reference=f"{base_name} (the recipe this one is composed from)",
        configuration="not checked", component_tests=[], convergence=None))
    build = base.workload.dataset.build
    rows = (f"Build its rows first: `{build.builder}` ({build.rows:,} rows of {build.row_tokens:,} tokens, "
            f"{request.global_batch} a step for {steps} steps). " if rows_path else "")
    interval = prediction.interval
    notes = (
        f"Planned by `{plan_command(request)} --emit-recipe {rank}`: predicted, not measured. The result's figures are "
        f"the planner's prediction: {tokens:,.1f} tokens/s per GPU "
        f"(held-out range {interval.low:,.0f} to {interval.high:,.0f}: {interval.basis}); "
        f"peak memory {prediction.memory.total_gib:.1f} of {prediction.capacity_gib:.1f} GiB per GPU, headroom "
        f"{prediction.headroom_gib:.1f} GiB against a {prediction.margin_gib:.1f} GiB margin. Stack, environment "
        f"and the rows' source come from {base_name}{moved}. {rows}{run_it}")
    planned = composed.model_copy(update=dict(
        status="planned", result=result, correctness=correctness, runs=None, notes=notes)).revalidated()
    return PlannedRecipe(rank, prediction, base_path, recipe_text(planned, HEADER))


def emit_recipe(request: PlanRequest, rank: int, out: Path, root: Path | None = None,
                force: bool = False) -> PlannedRecipe:
    """Write the rank-th runnable fitting torchtitan layout of the request to `out`, validated; `out` is new or a
    planned recipe this command wrote (`force`: also one in the catalog's recipes/)."""
    check_output(Path(out), "--out", starts_with(HEADER), force)  # before the planner's seconds of work
    engine = engine_named(request.engine)
    if engine.runner.runs_here and request.grad_reduce_bf16:
        raise UserError(f"--emit-recipe: --grad-reduce-bf16 is not {engine.name}'s; its recipes reduce in FP32")
    if request.low_precision:
        raise UserError(f"--emit-recipe writes BF16 recipes: no recipe field carries --precision "
                        f"{request.low_precision}'s flags yet; leave --precision out")
    tables = load_reference_tables(root)
    if request.variant and not tables.variants[request.variant].default:
        raise UserError(f"--emit-recipe: a recipe runs on a priced instance, which rents the {request.gpu_type} "
                        f"default variant, not {request.variant}; plan --gpu {request.gpu_type}")
    base_path = emit_base(request.model, request.gpu_type, request.gpus, root, request.engine)
    ranked = runnable_predictions(request, root)
    if not 1 <= rank <= len(ranked):
        raise UserError(f"--emit-recipe {rank}: choose 1..{len(ranked)} (the fitting {engine.name} layouts of "
                        f"{request.model} on {request.gpus} x {request.gpu_type} that a recipe can run)")
    planned = planned_recipe(base_path, rank, ranked[rank - 1], request, root)
    write_recipe(Path(out), planned.text, load_reference_tables(root), ours=starts_with(HEADER), force=force)
    return planned
