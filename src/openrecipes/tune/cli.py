"""`openrecipes tune`: measure the planner's best torchtitan layouts and write the winner as a recipe; and the two
`plan` commands that compose recipes through the renderer (launch/) and the recipe writer (audit/): `plan emit` and
`plan export`, added to the planner's `plan` group."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated

import typer

from openrecipes.atomic import check_output
from openrecipes.catalog.model import FLOAT8_SCALINGS
from openrecipes.catalog.paths import catalog_root, default_catalog_root
from openrecipes.catalog.store import load_catalog
from openrecipes.engines.registry import engine_named
from openrecipes.errors import UserError
from openrecipes.plan.cli import MAX_GPUS, Asked, with_request
from openrecipes.plan.cli import app as plan_app
from openrecipes.plan.words import describe

MAX_STEPS = 1_000_000  # a measuring run is short; a larger count is a typo (and overflows the run's fields)


def register(app: typer.Typer) -> None:
    app.command("tune")(tune)
    plan_app.command("emit")(with_request(emit))
    plan_app.command("export")(export)


def emit(
    asked: Asked,
    rank: Annotated[int, typer.Option(
        "--rank", "--emit-recipe", help="write the K-th fitting layout a recipe can run as a recipe "
        "(status: planned; stack, environment and data source from the catalog's recipe of MODEL under the engine)")],
    out: Annotated[Path | None, typer.Option("--out", help="where the recipe goes")] = None,
    force: Annotated[bool, typer.Option(
        "--force", help="replace a planned recipe this command wrote inside the catalog's recipes/")] = False,
    # the old spelling `plan MODEL ... --emit-recipe K` shared these with the table: refused in words, not unknown
    top: Annotated[int | None, typer.Option("--top", hidden=True)] = None,
    as_json: Annotated[bool, typer.Option("--json", hidden=True)] = False,
) -> None:
    """Write the K-th fitting layout of MODEL on N GPUs as a runnable recipe (status: planned), with the rows its
    row length needs and the command that builds them. Exit 2 on bad input."""
    from openrecipes.tune.emit import emit_recipe

    if out is None:
        raise UserError("--emit-recipe needs --out FILE (where the planned recipe goes)")
    if top is not None or as_json:
        raise UserError("--emit-recipe writes one recipe: --top and --json do not apply to it; leave them out")
    planned = emit_recipe(asked[0], rank, out, force=force)
    p = planned.prediction
    then = (f"run it with `openrecipes run {out}`" if engine_named(asked[0].engine).runner.runs_here
            else f"print its command with `openrecipes run {out} --dry-run`")
    print(f"wrote {out}: #{planned.rank} {describe(p.layout)}; predicted "
          f"{p.tokens_per_s_per_gpu:,.1f} tokens/s per GPU (status: planned, not measured); {then}")


def export(
    out: Annotated[Path | None, typer.Option("--out", help="the folder (the site reads plans/ in the catalog root)")]
    = None,
) -> None:
    """Write every model's Plan-page tables as JSON, one file per model (the site renders them). Exit 2 on bad
    input."""
    from openrecipes.tune.export import check_plans_folder
    from openrecipes.tune.export import export as export_plans

    if out is None:
        raise UserError("plan export needs --out DIR (the site reads plans/ in the catalog root)")
    check_plans_folder(out)  # before the catalog is read
    for path in export_plans(load_catalog(default_catalog_root()), out):
        print(f"wrote {path}")


def tune(
    model: Annotated[str, typer.Argument(help="model name, as in models/*.yaml (e.g. qwen3-8b)")],
    gpu: Annotated[str, typer.Option("--gpu", help="GPU type, a key of hardware/gpus.yaml (e.g. H200)")],
    gpus: Annotated[int, typer.Option("--gpus", min=1, max=MAX_GPUS, help="GPU count")],
    budget_minutes: Annotated[float, typer.Option("--budget-minutes", min=0, max=60 * 24 * 366,
                                                  help="device minutes the runs may take")],
    base: Annotated[Path | None, typer.Option(
        "--base", help="torchtitan recipe to start from (default: the catalog's stock recipe of MODEL on N x GPU)"),
    ] = None,
    out_recipe: Annotated[Path | None, typer.Option(
        "--out-recipe", help="where the winner's recipe goes (default: recipes/<model>/<gpu>/tuned-<layout>.yaml)"),
    ] = None,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="print the ranked candidates, minutes and exact commands; run nothing")] = False,
    steps: Annotated[int, typer.Option("--steps", min=2, max=MAX_STEPS, help="steps of each measuring run")] = 10,
    window_from: Annotated[int, typer.Option(
        "--window-from", min=0, max=MAX_STEPS, help="first step scored (the window runs to the last step)")] = 2,
    lanes: Annotated[int, typer.Option(
        "--lanes", min=1, max=MAX_GPUS, help="arms run at once, each on its own --gpus GPUs of this host")] = 1,
    wall_minutes: Annotated[float | None, typer.Option(
        "--wall-minutes", help="start no arm estimated to end later than this many minutes from now")] = None,
    search_kernels: Annotated[bool, typer.Option(
        "--kernels", help="also search Liger-Kernel's fused kernels: none, each alone, all four")] = False,
    search_attention: Annotated[bool, typer.Option(
        "--attention", help="also search the attention backend: torchtitan's default and each one pinned")] = False,
    float8: Annotated[str | None, typer.Option(
        "--float8", help="an FP8 search (tensorwise or rowwise scaling): its own board, never ranked with BF16; "
        "the BF16 base recipe stays the reference arm of the checks")] = None,
) -> None:
    """Measure the planner's best torchtitan layouts with short runs, drop those that cannot win, refit after each,
    and write the winner as a recipe checked against the base recipe's stock arm. Exit 2 on bad input."""
    import openrecipes.tune as tuning

    for option, minutes in (("--budget-minutes", budget_minutes), ("--wall-minutes", wall_minutes)):
        if minutes is not None and not (math.isfinite(minutes) and minutes > 0):  # NaN passes typer's min=
            raise UserError(f"{option} {minutes:g}: give a positive number of minutes")
    if float8 is not None and float8 not in FLOAT8_SCALINGS:
        raise UserError(f"--float8 {float8}: not one of {', '.join(FLOAT8_SCALINGS)}")
    if out_recipe is not None:  # told now, not after the runs
        check_output(out_recipe, "--out-recipe", None)
    # a base recipe's own catalog is the one planned with: its models, its parts (hardware/gpus.yaml), its runs/
    root = catalog_root(base) if base is not None else None
    setup = tuning.setup(model, gpu, gpus, base, root, kernels=search_kernels, attention=search_attention,
                         float8=float8)
    if dry_run:
        print(tuning.dry_run_text(setup, budget_minutes, steps), end="")
        return
    result = tuning.tune(setup, budget_minutes, steps=steps, lanes=lanes, window_first=window_from,
                         wall_minutes=wall_minutes)
    print(tuning.summary_text(result), end="")
    path = tuning.write_winner(setup, result, out_recipe)
    recorded_config, recorded_convergence = result.config, result.convergence
    if recorded_config is None or recorded_convergence is None:
        raise ValueError("write_winner records the winner's checks")
    print(f"wrote {path}: configuration {recorded_config.result}, convergence "
          f"{'pass' if recorded_convergence.passed else 'FAIL'}")
