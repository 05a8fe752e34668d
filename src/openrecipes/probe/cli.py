"""`openrecipes probe`: argument checks, the progress bar and the summary only."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from openrecipes.errors import UserError

if TYPE_CHECKING:
    from openrecipes.catalog.hardware import GpuSpec
    from openrecipes.probe.file import ProbeFile
    from openrecipes.probe.run import Step, Timer, Timing


def probe_command(
    out: Annotated[Path, typer.Option("--out", help="the probe file to write (JSON); in a catalog: "
                                      "hardware/probes/<part>.json")],
    device: Annotated[Literal["cuda", "cpu"], typer.Option(
        "--device", help="cuda: the GPU this process sees (each rank's, under torchrun); cpu: a trial with --quick")
    ] = "cuda",
    quick: Annotated[bool, typer.Option("--quick", help="tiny shapes, seconds: a trial of the command, no part's "
                                        "evidence")] = False,
    part: Annotated[str | None, typer.Option("--part", help="the hardware/gpus.yaml part this GPU is (default: the "
                                             "part whose reported_as lists the driver's device name)")] = None,
) -> None:
    """Measure this GPU's operators: GEMMs by shape (BF16, and FP8 from compute capability 8.9), causal attention by
    sequence length and head size, HBM bandwidth and, under torchrun with several GPUs, collectives by message size.
    Writes the raw timings; the planner and `audit` derive the tables from them (docs/probe.md)."""
    from openrecipes.atomic import check_output
    from openrecipes.catalog.hardware import load_reference_tables
    from openrecipes.catalog.paths import default_catalog_root
    from openrecipes.probe import run
    from openrecipes.probe.file import CPU, OURS, part_of_device, write_probe

    if device == "cpu" and not quick:
        raise UserError("--device cpu: the full grid takes hours on a CPU; add --quick to try the command (the "
                        "planner reads probes of GPUs)")
    if device == "cpu" and part is not None:
        raise UserError(f"--part: a CPU probe is of the part '{CPU}'; leave --part out, or probe on the GPU")
    check_output(out, "--out", OURS)  # before minutes of measuring, not after (a path under a file fails here too)
    reference = load_reference_tables(default_catalog_root())
    world = run.start_world(device)
    host = run.machine(world)
    probed = CPU if device == "cpu" else part_of_device(host.device, part, reference)
    grid = run.QUICK if quick else run.FULL
    plan = run.steps(grid, world, run.has_fp8(world))
    timings = _measured(plan, run.timer(world, grid.warmup, grid.repeats), shown=world.rank == 0)
    run.end_world(world)
    if world.rank != 0:
        return
    probe = run.probe_file(probed, host, world, quick, timings)
    out.parent.mkdir(parents=True, exist_ok=True)  # a catalog's first probe makes hardware/probes/
    write_probe(out, probe)
    _summary(out, probe, reference.variants.get(probed))


def _measured(plan: list[Step], time_it: Timer, shown: bool) -> list[Timing]:
    """The timings, with a progress bar on the rank that writes the file."""
    from openrecipes.probe.run import measure

    if not shown:
        return measure(plan, time_it, lambda label: None)
    with Progress(TextColumn("probe"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.description}"),
                  TimeElapsedColumn(), console=Console(highlight=False)) as bar:
        task, done = bar.add_task("", total=len(plan)), itertools.count()
        timings = measure(plan, time_it, lambda label: bar.update(task, completed=next(done), description=label))
        bar.update(task, completed=len(plan), description="done")
    return timings


def _summary(out: Path, probe: ProbeFile, spec: GpuSpec | None) -> None:
    from openrecipes.probe.tables import tables

    derived = tables(probe, spec)
    lines = [f"wrote {out}: {probe.part} ({probe.device}), {len(derived.gemm)} GEMMs, {len(derived.attention)} "
             f"attention shapes, {len(derived.copies)} copies, {len(derived.collectives)} collectives"]
    for precision in sorted({p.precision for p in derived.gemm}):
        rates = [p.flops_per_s for p in derived.gemm if p.precision == precision]
        efficiency = [p.efficiency for p in derived.gemm if p.precision == precision and p.efficiency is not None]
        of_peak = f", {min(efficiency):.0%}-{max(efficiency):.0%} of peak" if efficiency else ""
        lines.append(f"  GEMM {precision}: {min(rates) / 1e12:,.3g}-{max(rates) / 1e12:,.3g} TFLOP/s{of_peak}")
    lines.append(f"  HBM copy: {derived.hbm_bytes_per_s / 1e9:,.1f} GB/s")
    Console(highlight=False, soft_wrap=True).print("\n".join(lines), markup=False)


def register(app: typer.Typer) -> None:
    app.command("probe")(probe_command)
