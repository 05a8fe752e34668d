"""Start a rendered launch, keep its raw log, show its progress, then measure it and check it against its reference.

Step lines are read by the launch's own reader (its engine's log reader, the one parser of these logs): each output
line is fed to it once, as it arrives.
"""

from __future__ import annotations

import csv
import io
import os
import shutil
import socket
import subprocess
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from openrecipes import figures
from openrecipes.atomic import check_output_folder, write_atomic
from openrecipes.catalog.model import Recipe
from openrecipes.catalog.paths import RUN_COMMAND
from openrecipes.catalog.render import command
from openrecipes.engines.runner import Launch
from openrecipes.errors import UserError
from openrecipes.steptable import Step


def execute(launch: Launch, run_dir: Path, *, tokens_per_step: int, catalog: Path | None = None,
            overwrite: bool = False) -> Path:
    """Run `launch` to the end; the raw log lands in run_dir/train.log, the step table in run_dir/steps.csv and
    the exact command in run_dir/command.sh."""
    from openrecipes.measure.formats import strip_colour

    log = run_dir / "train.log"
    launcher = launch.argv()[0]
    if shutil.which(launcher, path=launch_environment(launch).get("PATH")) is None:  # before any folder is made
        raise UserError(f"{launcher}: not found on PATH; run where PyTorch and torchtitan are installed "
                        "(docs/running.md), or look at the command with --dry-run")
    from openrecipes.catalog.paths import default_catalog_root

    # A link, device or file is refused as --out; a folder of files is then ours only as a failed attempt's.
    check_output_folder(run_dir, "--out", lambda folder: (folder / "train.log").exists())
    prepare_run_dir(run_dir, catalog or default_catalog_root(), overwrite=overwrite)
    attempt = run_dir / ATTEMPT
    write_atomic(attempt, "running\n")  # until the run ends well: a folder holding it is a failed attempt of ours
    write_atomic(run_dir / RUN_COMMAND, launch.script())  # what `record` reads the run's layout from
    steps = launch.steps
    gpus = launch.nnodes * launch.nproc_per_node
    reader, table = launch.reader(), []
    console = Console()
    command(console, launch.script())  # byte for byte, never re-wrapped to the terminal
    with log.open("w") as sink, Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                          TimeElapsedColumn(), console=console) as progress:
        task = progress.add_task("starting", total=steps)
        process = subprocess.Popen(launch.argv(), env=launch_environment(launch), stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True, bufsize=1)
        assert process.stdout is not None  # stdout=PIPE
        for number, line in enumerate(process.stdout, start=1):
            sink.write(line)
            step = reader.feed(strip_colour(line.rstrip("\n")), f"{log}:{number}")
            if step is None:
                continue
            table.append(step)
            rate = (f"{figures.tokens_per_s_per_gpu(tokens_per_step, step.step_time_s, gpus):,.0f} tokens/s/GPU"
                    if step.step_time_s else "compiling/warming up")
            progress.update(task, completed=step.step + 1,
                            description=f"step {step.step + 1} loss {step.loss:.4f} {rate}")
        code = process.wait()
    if code != 0:
        write_atomic(attempt, f"failed: torchrun exited with {code}\n")
        raise UserError(f"torchrun exited with {code}: {last_line(log)} (the raw log is {log}; after a fix, run "
                        f"again with --overwrite)")
    write_steps_csv(table, run_dir / "steps.csv")
    attempt.unlink()
    return log


ATTEMPT = ".openrecipes-attempt"  # beside train.log while a run of ours goes or after it failed
OURS = {"train.log", "steps.csv", RUN_COMMAND, ATTEMPT}  # what a run folder of ours holds before it ends well


def prepare_run_dir(run_dir: Path, catalog: Path, *, overwrite: bool) -> None:
    """An empty run folder for a new run. A folder holding only a failed attempt of `openrecipes run` is emptied
    with --overwrite; any other train.log is kept (a published run stays as it was measured), and so is any log a
    recipe of the catalog pins by sha256, whatever the folder holds."""
    from openrecipes.digest import file_sha256

    log = run_dir / "train.log"
    if not log.exists():
        run_dir.mkdir(parents=True, exist_ok=True)
        return
    held = {p.name for p in run_dir.iterdir()}
    if ATTEMPT not in held or not held <= OURS:
        raise UserError(f"{log} exists and is not a failed attempt of `openrecipes run` (it may be a published run, "
                        f"never written over); give another --out")
    digest = file_sha256(log)
    if any(digest in recipe.read_text(encoding="utf-8") for recipe in (catalog / "recipes").rglob("*.yaml")):
        raise UserError(f"{log} is pinned by a recipe under {catalog / 'recipes'}: a published run, never written "
                        f"over; give another --out")
    if not overwrite:
        status = (run_dir / ATTEMPT).read_text(encoding="utf-8").strip()
        raise UserError(f"{run_dir} holds a failed attempt ({status}); add --overwrite to run into it again, or "
                        f"give another --out")
    for name in held:
        (run_dir / name).unlink()


def last_line(log: Path) -> str:
    """The log's last non-empty line, where torchrun's children say what stopped them."""
    lines = [line.strip() for line in log.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip()]
    return lines[-1][-300:] if lines else "the log is empty"


def launch_environment(launch: Launch) -> dict[str, str]:
    """The process environment with the launch's exports. A one-node torchrun listens on port 29500 unless told
    otherwise, so a second run on the same machine (one per GPU, as tune sweeps do) fails with EADDRINUSE: give each
    one-node run a free port through torchrun's PET_MASTER_PORT, unless the caller chose one."""
    env = {**os.environ, **launch.env}
    if launch.nnodes == 1 and "PET_MASTER_PORT" not in env:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            env["PET_MASTER_PORT"] = str(probe.getsockname()[1])
    return env


def write_steps_csv(steps: list[Step], path: Path) -> None:
    """The run's step table as `step,loss,step_time` (seconds), the CSV `check convergence` reads."""
    text = io.StringIO()
    csv.writer(text).writerows([["step", "loss", "step_time"], *([s.step, s.loss, s.step_time_s] for s in steps)])
    write_atomic(path, text.getvalue())


def report(recipe_path: Path, recipe: Recipe, log: Path, steps: int) -> None:
    """The measured result block of a run of `steps` steps, and the convergence check when the recipe names a
    reference arm. A run shorter than the recipe's is measured over the recipe's window clipped into it."""
    from openrecipes.catalog.paths import catalog_root
    from openrecipes.measure.result import clip_window, measure, read_run, recipe_tables, run_inputs
    from openrecipes.verify.convergence import read_curve
    from openrecipes.verify.verdicts import convergence_verdict

    console = Console()
    window = clip_window(recipe.result.window, steps)
    inputs = run_inputs(recipe, recipe_tables(recipe_path), steps_per_run=steps, window=window)
    result = measure(read_run([log]), inputs, None).as_json()
    if window != tuple(recipe.result.window):
        result["window_note"] = (f"the recipe's window {list(recipe.result.window)} clipped into this {steps}-step "
                                 f"run: {list(window)}")
    console.print_json(data=result)
    if not (recipe.runs and recipe.runs.reference):
        return
    # Relative to the catalog holding the recipe, as the catalog's own check reads runs:, else to the working folder.
    reference = (catalog_root(recipe_path) or Path.cwd()) / recipe.runs.reference / "train.log"
    if not reference.exists():
        raise UserError(f"the recipe's reference arm {reference} is missing; run the reference recipe first")
    verdict = convergence_verdict(read_curve(log), read_curve(reference))
    console.print(f"convergence against {reference}: {'pass' if verdict.passed else 'FAIL'} "
                  f"(correlation {_figure(verdict.correlation)}, final loss difference "
                  f"{_figure(verdict.final_loss_difference)})"
                  + "".join(f"\n  {reason}" for reason in verdict.reasons), markup=False)


def _figure(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.6f}"
