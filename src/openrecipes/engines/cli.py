"""`openrecipes run RECIPE [--dry-run] [--steps N] [--out runs/NAME]` and `openrecipes launch RECIPE --slurm`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from openrecipes.errors import UserError
from openrecipes.jsonout import json_text


def _recipe_and_launch(recipe_path: Path, steps: int | None):
    """The recipe, its run command as the validator read it (the one reading), and its torchtitan launch (None for
    a Megatron/slime recipe)."""
    from openrecipes.catalog.hardware import load_reference_tables
    from openrecipes.catalog.store import load_recipe_and_command
    from openrecipes.engines.torchtitan.engine import is_recipe
    from openrecipes.engines.torchtitan.render import run_launch

    recipe, parsed = load_recipe_and_command(recipe_path)
    if not is_recipe(parsed):
        return recipe, parsed, None
    return recipe, parsed, run_launch(recipe, load_reference_tables().models[recipe.model], parsed, steps)


def run_command(
    recipe_path: Annotated[Path, typer.Argument(metavar="RECIPE", help="a recipe YAML (torchtitan recipes run here)")],
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="print the exact command and resolved config; run nothing")] = False,
    steps: Annotated[int | None, typer.Option(
        "--steps", min=1, max=10**9, help="optimizer steps (default: the recipe's)")] = None,
    out: Annotated[Path | None, typer.Option("--out", help="run folder (default: runs/<recipe file name>)")] = None,
) -> None:
    """Run a recipe with torchrun: raw log and step,loss,step_time CSV under runs/, then measure and check it."""
    from openrecipes.engines.megatron.dry_run import dry_run_text

    recipe, parsed, launch = _recipe_and_launch(recipe_path, steps)
    if launch is None:
        print(dry_run_text(recipe, parsed))
        if not dry_run:
            raise UserError(f"{recipe_path}: a slime/Megatron recipe runs on the seeds' cluster; use --dry-run here")
        return
    if dry_run:
        print(launch.script(), end="")
        print(json_text({"env": launch.env, "nnodes": launch.nnodes, "nproc_per_node": launch.nproc_per_node,
                          "torchtitan": {flag: values for flag, values in launch.flags.items()}}, indent=2))
        return
    if launch.nnodes > 1:
        raise UserError(f"{recipe_path}: {launch.nnodes} nodes; write a batch script with `openrecipes launch --slurm`")
    from openrecipes.engines.execute import execute, report

    run_dir = out or Path("runs") / recipe_path.stem
    log = execute(launch, run_dir, tokens_per_step=recipe.workload.global_batch * recipe.workload.row_tokens)
    report(recipe_path, recipe, log, launch.steps)


def launch_command(
    recipe_path: Annotated[Path, typer.Argument(metavar="RECIPE", help="a torchtitan recipe YAML")],
    slurm: Annotated[bool, typer.Option(
        "--slurm", help="write an sbatch script (the one launcher so far)")] = False,
    out: Annotated[Path | None, typer.Option("--out", help="script file (default: print it)")] = None,
    force: Annotated[bool, typer.Option(
        "--force", help="let --out replace a batch script it wrote inside the catalog's recipes/ or runs/")] = False,
) -> None:
    """A batch script that starts the recipe on its nodes: one torchrun per node, c10d rendezvous, logs in runs/."""
    from openrecipes.atomic import check_output, write_output
    from openrecipes.engines.launch import sbatch_script

    if not slurm:
        raise UserError("name the scheduler: --slurm")
    if out is not None:  # refused before the recipe is read, so a bad --out is the one error told
        check_output(out, "--out", _batch_script, force)
    _, _, launch = _recipe_and_launch(recipe_path, None)
    if launch is None:
        raise UserError(f"{recipe_path}: not a torchtitan recipe; its own command is in `openrecipes run --dry-run`")
    script = sbatch_script(launch, job_name=recipe_path.stem, run_dir=f"runs/{recipe_path.stem}")
    if out is None:
        print(script, end="")
        return
    write_output(out, script, "--out", _batch_script, force=force, mode=0o755)
    Console(stderr=True).print(f"wrote {out}: sbatch {out}", markup=False, highlight=False)


def _batch_script(path: Path) -> bool:
    """A batch script `launch --slurm` wrote: a bash script with an #SBATCH job name near its top."""
    with open(path, "rb") as file:
        head = file.read(4096)
    return head.startswith(b"#!/bin/bash\n") and b"\n#SBATCH --job-name=" in head


def register(app: typer.Typer) -> None:
    app.command("run")(run_command)
    app.command("launch")(launch_command)
