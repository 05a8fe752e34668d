"""`openrecipes run RECIPE [--dry-run] [--steps N] [--out runs/NAME]` and `openrecipes launch RECIPE --slurm`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from openrecipes.errors import UserError

if TYPE_CHECKING:
    from openrecipes.catalog.model import Recipe
    from openrecipes.engines.runner import Launch, Runner


def _recipe_and_launch(recipe_path: Path, steps: int | None) -> tuple[Recipe, Runner, Launch]:
    """The recipe, its engine's runner, and its launch rendered from the run command as the validator read it (the
    one reading)."""
    from openrecipes.catalog.hardware import load_reference_tables
    from openrecipes.catalog.store import load_recipe_and_command
    from openrecipes.engines.registry import engine_named

    recipe, parsed = load_recipe_and_command(recipe_path)
    runner = engine_named(recipe.engine).runner
    return recipe, runner, runner.launch(recipe, load_reference_tables().models[recipe.model], parsed, steps)


def run_command(
    recipe_path: Annotated[Path, typer.Argument(metavar="RECIPE", help="a recipe YAML (torchtitan recipes run here)")],
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="print the exact command and resolved config; run nothing")] = False,
    steps: Annotated[int | None, typer.Option(
        "--steps", min=1, max=10**9, help="optimizer steps (default: the recipe's)")] = None,
    out: Annotated[Path | None, typer.Option("--out", help="run folder (default: runs/<recipe file name>)")] = None,
    overwrite: Annotated[bool, typer.Option(
        "--overwrite", help="run into --out although it holds a failed attempt of ours (a published run: never)"),
    ] = False,
) -> None:
    """Run a recipe with torchrun: raw log and step,loss,step_time CSV under runs/, then measure and check it.
    Before starting it checks its engine's package (torchtitan), the CUDA GPU count and the rows file (with its
    sha256)."""
    recipe, runner, launch = _recipe_and_launch(recipe_path, steps)
    if dry_run or not runner.runs_here:  # a launch that runs elsewhere is shown, then refused
        print(launch.dry_run(), end="")
    if dry_run:
        return
    try:
        launch.argv()  # a launch that runs elsewhere has no command here
    except UserError as elsewhere:
        raise UserError(f"{recipe_path}: {elsewhere}") from None
    if launch.nnodes > 1:
        raise UserError(f"{recipe_path}: {launch.nnodes} nodes; write a batch script with `openrecipes launch --slurm`")
    from openrecipes.atomic import check_output_folder
    from openrecipes.catalog.paths import catalog_root
    from openrecipes.launch.execute import execute, report
    from openrecipes.launch.preflight import check_can_run
    from openrecipes.launch.run_folder import run_folder

    run_dir = out or run_folder(recipe_path)
    # A bad --out (a link, a device, a file) is the one error told, before the checks import torch.
    check_output_folder(run_dir, "--out", lambda folder: (folder / "train.log").exists())
    check_can_run(recipe_path, recipe, runner, launch)
    log = execute(launch, run_dir, tokens_per_step=recipe.workload.global_batch * recipe.workload.row_tokens,
                  catalog=catalog_root(recipe_path) or Path.cwd(), overwrite=overwrite)
    report(recipe_path, recipe, log, launch.steps)


def launch_command(
    recipe_path: Annotated[Path, typer.Argument(metavar="RECIPE", help="a torchtitan recipe YAML")],
    slurm: Annotated[bool, typer.Option(
        "--slurm", help="write an sbatch script (the one launcher so far)")] = False,
    out: Annotated[Path | None, typer.Option("--out", help="script file (default: print it)")] = None,
    submit: Annotated[bool, typer.Option(
        "--submit", help="write the script to runs/<name>/launch.sbatch (or --out), sbatch it, print the job id",
    )] = False,
    probe: Annotated[str | None, typer.Option(
        "--probe", metavar="gloo|nccl", help="start openrecipes.launch.probe (rendezvous and all-reduce on every "
        "rank, no model) in place of training; gloo asks for no GPUs")] = None,
    partition: Annotated[str | None, typer.Option("--partition", help="sbatch --partition")] = None,
    account: Annotated[str | None, typer.Option("--account", help="sbatch --account")] = None,
    time: Annotated[str | None, typer.Option("--time", help="sbatch --time (minutes, HH:MM:SS or D-HH:MM:SS)")] = None,
    qos: Annotated[str | None, typer.Option("--qos", help="sbatch --qos")] = None,
    reservation: Annotated[str | None, typer.Option("--reservation", help="sbatch --reservation")] = None,
    container_image: Annotated[str | None, typer.Option(
        "--container-image", help="pyxis/enroot image every node's torchrun runs in")] = None,
    force: Annotated[bool, typer.Option(
        "--force", help="let --out replace a batch script it wrote inside the catalog's recipes/ or runs/")] = False,
) -> None:
    """A batch script that starts the recipe on its nodes: one torchrun per node, node ranks from Slurm, one log per
    node in runs/<name>/; --submit hands it to sbatch."""
    from openrecipes.atomic import check_output, write_output
    from openrecipes.launch import slurm as slurm_launch
    from openrecipes.launch.run_folder import run_folder

    if not slurm:
        raise UserError("name the scheduler: --slurm")
    run_dir = run_folder(recipe_path)  # the job's name and every output of it, refused before anything is read
    if out is not None:  # refused before the recipe is read, so a bad --out is the one error told
        check_output(out, "--out", _batch_script, force)
    options = slurm_launch.SlurmOptions(partition=partition, account=account, time=time, qos=qos,
                                        reservation=reservation, container_image=container_image)
    recipe, _, launch = _recipe_and_launch(recipe_path, None)
    try:
        command = slurm_launch.recipe_command(recipe, launch, run_dir=str(run_dir), probe=probe)
    except UserError as bad:
        raise UserError(f"{recipe_path}: {bad}") from None
    script = slurm_launch.sbatch_script(command, name=run_dir.name, run_dir=str(run_dir), options=options)
    if not submit:
        if out is None:
            print(script, end="")
            return
        write_output(out, script, "--out", _batch_script, force=force, mode=0o755)
        Console(stderr=True).print(f"wrote {out}: sbatch {out}", markup=False, highlight=False)
        return
    sbatch = slurm_launch.find_sbatch()
    out = out or run_dir / "launch.sbatch"
    check_output(out, "--out", _batch_script, force)  # before the run folder is made
    run_dir.mkdir(parents=True, exist_ok=True)
    write_output(out, script, "--out", _batch_script, force=force, mode=0o755)
    job = slurm_launch.submit(sbatch, out, run_dir)
    Console(stderr=True).print(f"submitted {out} as job {job}; node logs: {run_dir}/train.node<N>.log",
                               markup=False, highlight=False)
    print(job)


def _batch_script(path: Path) -> bool:
    """A batch script `launch --slurm` wrote: a bash script with an #SBATCH job name near its top."""
    with open(path, "rb") as file:
        head = file.read(4096)
    return head.startswith(b"#!/bin/bash\n") and b"\n#SBATCH --job-name=" in head


def register(app: typer.Typer) -> None:
    app.command("run")(run_command)
    app.command("launch")(launch_command)
