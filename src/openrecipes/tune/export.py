"""The Plan pages as data: `openrecipes plan export --out DIR` writes one JSON file per model (openrecipes.plan.pages
computes it) with each runnable row's planned recipe composed here, sealed with a fingerprint of its data inputs, the
planner's version and its own content (openrecipes.tune.fingerprint): `refresh --check` fails when a committed one is
stale or edited."""

from __future__ import annotations

from collections.abc import Callable, Collection
from functools import partial
from pathlib import Path

from openrecipes.atomic import check_output_folder, starts_with, write_output
from openrecipes.catalog.store import Catalog, load_recipe
from openrecipes.engines.registry import engine_named
from openrecipes.errors import UserError
from openrecipes.plan.export_model import PlannedRecipeOffer
from openrecipes.plan.pages import model_plan, plan_command, plan_models
from openrecipes.plan.predict import PlanRequest, Prediction
from openrecipes.tune.candidates import renderable
from openrecipes.tune.emit import planned_recipe
from openrecipes.tune.fingerprint import plan_inputs, sealed
from openrecipes.tune.search import find_base


def _planned_recipes(request: PlanRequest, ranked: list[Prediction], top: int,
                     root: Path) -> dict[int, PlannedRecipeOffer]:
    """For a torchtitan table with a recipe to compose from: each shown row's planned recipe, by its index among
    the shown rows (the same text `plan --emit-recipe RANK` writes, RANK among the runnable fitting layouts)."""
    if not engine_named(request.engine).runner.runs_here:
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
        (p for p in ranked if renderable(p.layout)), start=1)}
    return {index: PlannedRecipeOffer(rank=rank, text=planned_recipe(base_path, rank, p, request, root).text, command=(
        f"{plan_command(request)} --emit-recipe {rank} "
        f"--out {request.model.lower()}-{request.gpu_type.lower()}x{request.gpus}-planned-{rank}.yaml"))
        for index, p in enumerate(ranked[:top]) if (rank := runnable_rank.get(id(p))) is not None}


def plan_text(catalog: Catalog, model: str, inputs: str) -> str:
    """plans/<model>.json's text, sealed with `inputs` (its entry of `plan_inputs`)."""
    offers = partial(_planned_recipes, root=catalog.root)
    return sealed(model_plan(catalog, model, "", offers).model_dump_json(indent=1) + "\n", inputs, model)


def export(catalog: Catalog, out: Path, only: Collection[str] | None = None,
           done: Callable[[str], None] = lambda model: None) -> list[Path]:
    """One JSON file per model with recipes or published entries (`plan_models`), or per model of `only` among
    them: `<out>/<model>.json`; `out` is new, empty or a folder of them. `done` hears each model once written."""
    check_plans_folder(out)
    out.mkdir(parents=True, exist_ok=True)
    seals = plan_inputs(catalog)
    written = []
    for model in plan_models(catalog):
        if only is not None and model not in only:
            continue
        path = out / f"{model}.json"
        write_output(path, plan_text(catalog, model, seals[model]), "--out", PLAN_FILE)
        written.append(path)
        done(model)
    return written


PLAN_FILE = starts_with('{\n "fingerprint": ')  # the first key of every file `export` writes


def check_plans_folder(out: Path) -> None:
    """`out` is new, empty, or a folder of plan files (openrecipes.atomic's rule for folders)."""
    check_output_folder(out, "--out", lambda folder: any(
        PLAN_FILE(path) for path in folder.glob("*.json") if path.is_file() and not path.is_symlink()))
