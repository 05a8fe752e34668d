"""`openrecipes plan`: the ranked predicted layouts of a model on N GPUs."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from openrecipes.atomic import check_output
from openrecipes.engines.registry import names as engine_names
from openrecipes.errors import UserError
from openrecipes.jsonout import json_text
from openrecipes.plan.levers import parse_levers
from openrecipes.plan.predict import PlanRequest, Prediction, plan_table, predict
from openrecipes.plan.trust import memory_margin

# Non-fitting layouts shown under the fitting ones: enough to see what stops the next-larger layouts.
NON_FITTING_SHOWN = 5
MAX_GPUS = 16384  # the planner enumerates every layout of the GPU count; past this no catalog run exists
MAX_STEPS = 1_000_000  # a measuring run is short; a larger count is a typo (and overflows the run's fields)


def register(app: typer.Typer) -> None:
    app.command("plan")(plan)
    app.command("tune")(tune)


def plan(
    model: Annotated[str, typer.Argument(
        help="model name, as in models/*.yaml (e.g. gpt-oss-20b); or `export` to write the Plan pages' tables")],
    gpu: Annotated[str | None, typer.Option("--gpu", help="GPU type, a key of hardware/gpus.yaml (e.g. H200)")] = None,
    gpus: Annotated[int | None, typer.Option("--gpus", min=1, max=MAX_GPUS, help="GPU count")] = None,
    row_tokens: Annotated[
        int, typer.Option("--row-tokens", min=1, max=2**24, help="tokens per training row")] = 8192,
    global_batch: Annotated[
        int, typer.Option("--global-batch", min=1, max=2**24, help="rows per optimizer step")] = 128,
    engine: Annotated[str, typer.Option("--engine", help="megatron or torchtitan")] = "megatron",
    grad_reduce_bf16: Annotated[bool, typer.Option(
        "--grad-reduce-bf16", help="BF16 gradient buffers (Megatron --grad-reduce-in-bf16, as the gpt-oss seeds use)"),
    ] = False,
    kernels: Annotated[str | None, typer.Option(
        "--kernels", help="torchtitan: Liger-Kernel kernels on every layout, comma-separated (e.g. "
        "liger-rmsnorm,liger-fused-linear-cross-entropy)")] = None,
    attention: Annotated[str | None, typer.Option(
        "--attention", help="torchtitan: attention backend (sdpa-cudnn, sdpa-flash, sdpa-efficient, flex)")] = None,
    float8: Annotated[str | None, typer.Option(
        "--float8", help="torchtitan: FP8 linear layers with this scaling (tensorwise, rowwise)")] = None,
    top: Annotated[int, typer.Option("--top", min=0, max=10**6, help="fitting layouts to show (0: all)")] = 20,
    as_json: Annotated[
        bool, typer.Option("--json", help="print every ranked layout (or --top of them) as JSON")] = False,
    emit_recipe: Annotated[int | None, typer.Option(
        "--emit-recipe", help="write the N-th fitting torchtitan layout a recipe can run as a recipe (status: planned; "
        "workload from the catalog's torchtitan recipe of MODEL on N x GPU)")] = None,
    out: Annotated[Path | None, typer.Option(
        "--out", help="where --emit-recipe writes the recipe; for `plan export`, the folder (the site reads plans/)"),
    ] = None,
    force: Annotated[bool, typer.Option(
        "--force", help="let --emit-recipe replace a planned recipe it wrote inside the catalog's recipes/")] = False,
) -> None:
    """Predict memory and speed of every valid layout and rank them: fitting layouts by tokens/s per GPU,
    then the ones that do not fit with the reason. `plan export --out DIR` writes every model's Plan-page tables
    as JSON. Exit 2 on bad input."""
    if model == "export":
        _export(out)
        return
    if gpu is None or gpus is None:
        raise UserError("give --gpu TYPE and --gpus N (e.g. openrecipes plan gpt-oss-20b --gpu H200 --gpus 8)")
    if engine not in engine_names():
        raise UserError(f"--engine {engine}: use {' or '.join(engine_names())}")
    if emit_recipe is not None:
        from openrecipes.tune.emit import emit_recipe as emit

        if out is None:
            raise UserError("--emit-recipe needs --out FILE (where the planned recipe goes)")
        planned = emit(model, gpu, gpus, emit_recipe, out, force=force)
        p = planned.prediction
        print(f"wrote {out}: #{planned.rank} {p.layout.label} {p.layout.recompute} recompute, "
              f"{p.layout.rows_per_microbatch} row(s) a microbatch; predicted {p.tokens_per_s_per_gpu:,.1f} tokens/s "
              f"per GPU (status: planned, not measured); run it with `openrecipes run {out}`")
        return
    levers = parse_levers(kernels, attention, float8)
    request = PlanRequest(model, gpu, gpus, row_tokens, global_batch, engine, grad_reduce_bf16, **levers)
    if as_json:
        print(json_text(plan_table(model, gpu, gpus, row_tokens, global_batch, engine, grad_reduce_bf16, top or None,
                                   **levers)))
        return
    _print_table(Console(), request, predict(request), top)


def _export(out: Path | None) -> None:
    from openrecipes.catalog.paths import default_catalog_root
    from openrecipes.catalog.store import load_catalog
    from openrecipes.tune.export import check_plans_folder, export

    if out is None:
        raise UserError("plan export needs --out DIR (the site reads plans/ in the catalog root)")
    check_plans_folder(out)  # before the catalog is read
    for path in export(load_catalog(default_catalog_root()), out):
        print(f"wrote {path}")


def _print_table(console: Console, request: PlanRequest, ranked: list[Prediction], top: int) -> None:
    fitting = [p for p in ranked if p.fits]
    not_fitting = [p for p in ranked if not p.fits]
    rows = (fitting[:top] if top else fitting) + not_fitting[:NON_FITTING_SHOWN]
    margin = memory_margin(request.engine)
    bases = sorted({p.interval.basis for p in rows})
    table = Table(title=f"{request.model} on {request.gpus} x {request.gpu_type} ({request.engine}): "
                        f"{len(fitting):,} of {len(ranked):,} valid layouts fit; predicted, not measured",
                  caption=f"{request.row_tokens:,}-token rows, global batch {request.global_batch}; GiB: predicted "
                          f"peak of {ranked[0].capacity_gib:.1f} GiB; fits: leaves {margin.margin:.1%} of the "
                          f"predicted allocator peak free ({margin.basis}); range: " + " | ".join(bases)
                          + "; --json has every part")
    for header in ("#", "Layout", "Recompute", "Offload", "Tokens/GPU", "GiB", "Headroom", "Tokens/s/GPU", "Range",
                   "MFU", "$/1M", "Fit"):
        table.add_column(header, justify="left" if header in ("Layout", "Recompute", "Fit") else "right")
    for rank, p in enumerate(rows, 1):
        lay, interval = p.layout, p.interval
        table.add_row(
            str(rank) if p.fits else "-", lay.label, lay.recompute, f"{lay.offload_fraction:g}",
            f"{lay.max_tokens_per_gpu:,}", f"{p.memory.total_gib:.1f}", f"{p.headroom_gib:.1f}",
            f"{p.tokens_per_s_per_gpu:,.1f}", f"{interval.low:,.0f}-{interval.high:,.0f}"
            + ("" if interval.constrained else "*"),
            f"{p.mfu:.1%}", f"{p.usd_per_million_tokens:.2f}" if p.usd_per_million_tokens is not None else "-",
            "yes" if p.fits else p.short_reason)
    console.print(table)
    if any(not p.interval.constrained for p in rows):
        console.print("* no measured point constrains this layout: the range is wide (see the caption)")
    unmeasured = ranked[0].step.unmeasured_levers
    if unmeasured:
        console.print(f"time effect unmeasured (predicted as without them): {', '.join(unmeasured)}; memory: "
                      "docs/planning.md, levers")


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
    if lanes < 1 or steps < 2:
        raise UserError(f"--lanes {lanes} --steps {steps}: give at least one lane and two steps")
    parse_levers(None, None, float8)  # an unknown scaling is an error naming the allowed ones
    if out_recipe is not None:  # told now, not after the runs
        check_output(out_recipe, "--out-recipe", None)
    setup = tuning.setup(model, gpu, gpus, base, kernels=search_kernels, attention=search_attention, float8=float8)
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
