"""The planner at scale: `predict` on 1,024 and 8,192 GPUs, the planner of an earlier commit against this one in one
process, the two arms alternating; then every catalog model on 1,024 and 8,192 GPUs with this checkout alone.

The baseline is the package at `--baseline` (default: main before the planner searched every lever), read with
`git archive` (benchmarks/plan_speed.py's `load_baseline`); both arms plan from this checkout's catalog and from its
calibration, held-out errors and reference points (copied over the baseline's; its own models/ and hardware/ as of
that commit, whose planner fields are today's), so any difference is the code's.
The new planner leaves out the optimizer offload fractions after the first that fits (they fit and run slower) and
adds torchtitan's lever settings, so the arms enumerate different sets: every layout the new one lists that the old
one also enumerates must have byte-identical `--json` objects in both (checked on every run). Times are CPU seconds.

    .venv/bin/python benchmarks/plan_scale.py [--runs 1] [--baseline REF] [--alone] [--tiny]   # a Markdown section
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import sys
import tempfile
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from plan_speed import _package_modules, load_baseline, timed  # noqa: E402

from openrecipes.catalog.store import load_catalog  # noqa: E402
from openrecipes.jsonout import json_text  # noqa: E402
from openrecipes.plan import predict as current  # noqa: E402
from openrecipes.plan.answer import default_engine  # noqa: E402
from openrecipes.plan.cli import NON_FITTING_SHOWN  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
BASELINE = "ff28b97"  # main before plan searched every lever
# Both arms, timed against each other: the request the brief named slow, and GLM's largest Megatron plan.
COMPARED = [("gpt-oss-20b", "B200", 1024, "megatron"), ("gpt-oss-20b", "B200", 8192, "megatron"),
            ("GLM-5.2-744B-A40B", "B200", 1024, "megatron")]
SCALES = (1024, 8192)
# --tiny: one small request through both arms and the first catalog model alone, at 8 GPUs, against this checkout's
# committed planner (the default baseline cannot read today's calibration): a check that the benchmark runs.
TINY_COMPARED, TINY_SCALES = [("gpt-oss-20b", "B200", 8, "megatron")], (8,)


def _key(row) -> tuple:
    return (row.label, row.recompute, row.offload_fraction, row.rows_per_microbatch, row.compile,
            row.reshard_after_forward, tuple(row.kernels), row.attention, row.float8)


def _ranked(planner, root: Path, model: str, gpu: str, gpus: int, engine: str) -> list:
    """What `plan` works out before it prints its top rows: every valid layout predicted and ranked."""
    request = planner.PlanRequest(model, gpu, gpus, 8192, gpus, engine)
    return planner.predict(request, planner.load_reference_tables(root))


def _terminal(root: Path, model: str, gpu: str, gpus: int, engine: str) -> current.Ranking:
    """What `plan` works out before it prints its table: every layout that fits (or fits but for the margin)
    predicted and ranked, and the few misses it shows."""
    request = current.PlanRequest(model, gpu, gpus, 8192, gpus, engine)
    return current.ranking(request, NON_FITTING_SHOWN, current.load_reference_tables(root))


def _rows(planner, root: Path, model: str, gpu: str, gpus: int, engine: str) -> list:
    """Every layout as `plan --json` prints it (what the two arms compare byte for byte)."""
    return [p.exported() for p in _ranked(planner, root, model, gpu, gpus, engine)]


def _cell(values: list[float]) -> str:
    if len(values) == 1:
        return f"{values[0]:.1f} s"
    return f"{statistics.median(values):.1f} s ({min(values):.1f}–{max(values):.1f})"


def _compare(baseline_ref: str, runs: int, compared: list[tuple]) -> tuple[dict, dict]:
    """Both arms on `compared`, alternating: CPU seconds and layout counts per request and arm."""
    seconds: dict[tuple, list[float]] = {}
    counts: dict[tuple, dict[str, int]] = {}
    with tempfile.TemporaryDirectory() as folder:
        baseline, baseline_modules = load_baseline(baseline_ref, Path(folder))  # with this checkout's plan data
        arms = {"before": (baseline_modules, baseline, Path(folder)), "now": (_package_modules(), current, REPO)}
        for _ in range(runs):
            for request in compared:
                rows = {}
                for arm, (modules, planner, root) in arms.items():
                    rows[arm], elapsed = timed(modules, partial(_rows, planner, root, *request))
                    seconds.setdefault((request, arm), []).append(elapsed)
                    counts.setdefault(request, {})[arm] = len(rows[arm])
                old = {_key(row): json_text(row) for row in rows["before"]}
                common = [row for row in rows["now"] if _key(row) in old]
                assert common and all(json_text(row) == old[_key(row)] for row in common), request
                counts[request]["common"] = len(common)
    return seconds, counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--baseline", default=BASELINE)
    parser.add_argument("--alone", action="store_true", help="this checkout only: no baseline arm (a baseline "
                        "whose calibration fields differ cannot read this checkout's calibration.yaml)")
    parser.add_argument("--tiny", action="store_true", help="one small request, --baseline HEAD (a check that it runs)")
    args = parser.parse_args()
    compared, scales = (TINY_COMPARED, TINY_SCALES) if args.tiny else (COMPARED, SCALES)
    if args.tiny:
        args.runs, args.baseline = 1, "HEAD"
    load = os.getloadavg()
    seconds, counts = ({}, {}) if args.alone else _compare(args.baseline, args.runs, compared)
    alone: dict[tuple, list[tuple[int, float]]] = {}
    catalog = load_catalog(REPO)
    for _ in range(args.runs):
        for model in sorted(catalog.tables.models)[:1 if args.tiny else None]:
            engine = default_engine(catalog, model).engine
            for gpus in scales:
                ranked, elapsed = timed(_package_modules(), partial(_terminal, REPO, model, "B200", gpus, engine))
                alone.setdefault((model, engine, gpus), []).append((ranked.valid, elapsed))
    end = os.getloadavg()
    flags = f"--runs {args.runs}" + (" --alone" if args.alone else "") + (" --tiny" if args.tiny else "")
    print(f"## Planner at scale — {datetime.date.today()} (benchmarks/plan_scale.py {flags})\n")
    print(f"Machine: {os.cpu_count()} CPUs, {platform.processor() or platform.machine()}, Python "
          f"{platform.python_version()}; load average (1, 5, 15 min) {', '.join(f'{x:.2f}' for x in load)} at the "
          f"start, {', '.join(f'{x:.2f}' for x in end)} at the end. CPU seconds of `predict` (every valid layout "
          f"predicted and ranked, what `plan` does before it prints its top rows; the arms compared below also "
          f"export every layout as `--json` does), {args.runs} run(s) per arm, the median shown; global batch = "
          "GPUs, 8,192-token rows, B200.\n")
    if not args.alone:
        print(f"\"before\": the package at {args.baseline}; \"now\": this checkout; both with this checkout's "
              "calibration. Every layout both arms list has byte-identical `--json` objects.\n")
        print("| request | layouts before | layouts now (both) | before | now | before / now |\n"
              "|---|---:|---:|---:|---:|---:|")
        for request in compared:
            model, gpu, gpus, engine = request
            before, now = seconds[(request, "before")], seconds[(request, "now")]
            n = counts[request]
            print(f"| {model}, {gpus:,} x {gpu}, {engine} | {n['before']:,} | {n['now']:,} ({n['common']:,}) | "
                  f"{_cell(before)} | {_cell(now)} | **{statistics.median(before) / statistics.median(now):.1f}x** |")
    print("\nEvery catalog model with this checkout alone (the engine `plan` defaults to for it, B200, global batch = "
          "GPUs), timing what the terminal's `plan` works out before it prints: every layout that fits or fits but "
          "for the margin, and the closest misses it shows (a miss's step is not worked out otherwise):\n")
    print("| model | engine | GPUs | layouts | now |\n|---|---|---:|---:|---:|")
    for (model, engine, gpus), found in alone.items():
        print(f"| {model} | {engine} | {gpus:,} | {found[0][0]:,} | {_cell([elapsed for _, elapsed in found])} |")

if __name__ == "__main__":
    main()
