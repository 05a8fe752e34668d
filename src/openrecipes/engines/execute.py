"""Start a rendered launch, keep its raw log, show its progress, then measure it and check it against its reference.

Step lines are read by the measure room's torchtitan reader, the one parser of these logs.
"""

from __future__ import annotations

import csv
import os
import subprocess
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from openrecipes.catalog.model import Recipe
from openrecipes.engines.torchtitan.render import TorchtitanLaunch
from openrecipes.errors import UserError

STEP_MARK = "step:"


def execute(launch: TorchtitanLaunch, run_dir: Path, *, tokens_per_step: int) -> Path:
    """Run `launch` to the end; the raw log lands in run_dir/train.log and the step table in run_dir/steps.csv."""
    from openrecipes.measure.formats import read_torchtitan

    log = run_dir / "train.log"
    if log.exists():
        raise UserError(f"{log} exists: it may be a published run; give another --out")
    run_dir.mkdir(parents=True, exist_ok=True)
    steps = int(launch.flags["--training.steps"][0])
    gpus = launch.nnodes * launch.nproc_per_node
    kept: list[str] = []  # the lines the step reader needs: the start line and the step lines
    console = Console()
    console.print(launch.script(), markup=False, highlight=False)
    with log.open("w") as sink, Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                          TimeElapsedColumn(), console=console) as progress:
        task = progress.add_task("starting", total=steps)
        process = subprocess.Popen(launch.argv(), env={**os.environ, **launch.env}, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True, bufsize=1)
        for line in process.stdout:
            sink.write(line)
            if STEP_MARK in line or "Training starts" in line:
                kept.append(line.rstrip("\n"))
                table = read_torchtitan(log, kept)
                if table.steps:
                    last = table.steps[-1]
                    rate = (f"{tokens_per_step / last.step_time_s / gpus:,.0f} tokens/s/GPU"
                            if last.step_time_s else "compiling/warming up")
                    progress.update(task, completed=last.step + 1,
                                    description=f"step {last.step + 1} loss {last.loss:.4f} {rate}")
        code = process.wait()
    if code != 0:
        raise UserError(f"torchrun exited with {code}; the raw log is {log}")
    write_steps_csv(log, run_dir / "steps.csv")
    return log


def write_steps_csv(log: Path, path: Path) -> None:
    from openrecipes.measure.formats import read_log

    with path.open("w", newline="") as sink:
        writer = csv.writer(sink)
        writer.writerow(["step", "loss", "step_time"])
        for step in read_log(log).steps:
            writer.writerow([step.step, step.loss, step.step_time_s])


def report(recipe_path: Path, recipe: Recipe, log: Path) -> None:
    """The measured result block, and the convergence check when the recipe names a reference arm."""
    from openrecipes.measure.result import inputs_from_recipe, measure, read_run
    from openrecipes.verify.convergence import check_convergence, read_curve

    console = Console()
    result = measure(read_run([log]), inputs_from_recipe(recipe_path), None)
    console.print_json(data=result)
    reference = Path(recipe.runs.reference) / "train.log" if recipe.runs and recipe.runs.reference else None
    if reference is None:
        return
    if not reference.exists():
        raise UserError(f"the recipe's reference arm {reference} is missing; run the reference recipe first")
    verdict = check_convergence(read_curve(log), read_curve(reference))
    console.print(f"convergence against {reference}: {'pass' if verdict['passed'] else 'FAIL'} "
                  f"(correlation {verdict['correlation']:.6f}, final loss difference "
                  f"{verdict['final_loss_difference']:.6f})", markup=False)
