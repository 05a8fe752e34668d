"""The planner's speed now against the planner of an earlier commit, in one process, the two arms alternating:
`predict` (every valid layout predicted and ranked) and `plan_table` (the same, then every layout exported as
`plan --json` prints it); and the command `plan ... --top 0 --json` in a fresh process per run, alternating the same
way.

The baseline is not this code with its caches turned off (the speedup also groups work and builds fewer objects): it
is the package as it was at `--baseline` (default: the commit the planner's speedup started from), with its own
models/ and hardware/ (its schema may not read today's cards), read with `git archive` into a temporary folder: in
this process it is imported under the same name (while an arm runs, its own `openrecipes` modules are the ones in
`sys.modules`), and the command runs with that folder first on PYTHONPATH. Both arms plan with this checkout's
calibration and trust data (copied over the baseline's); every run asserts that every layout both list has
byte-identical `--json` objects (the planner since searches torchtitan's levers and leaves out dominated offload
fractions, so the lists differ; see benchmarks/plan_scale.py). Times are CPU seconds (of this process, or of the
command's process): on a machine shared with other work they vary less than wall time.

    .venv/bin/python benchmarks/plan_speed.py [--runs 3] [--baseline REF] [--tiny]   # a Markdown section for RESULTS.md

`--tiny`: one run, the first request, this checkout's committed planner as the baseline (the default baseline cannot
read today's calibration): a check that the benchmark runs; its figures mean nothing.
"""

from __future__ import annotations

import argparse
import datetime
import io
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any

from openrecipes.jsonout import json_text
from openrecipes.plan import predict as current

REPO = Path(__file__).resolve().parents[1]
BASELINE = "7926fcd"  # main before the planner's speedup
COMMAND = ("gpt-oss-20b", "--gpu", "H200", "--gpus", "8", "--grad-reduce-bf16", "--top", "0", "--json")
REQUESTS: dict[str, dict[str, Any]] = {  # plan_table's arguments
    "gpt-oss-20b, 8 x H200, megatron, BF16 gradient buffers":
        {"model": "gpt-oss-20b", "gpu_type": "H200", "gpus": 8, "grad_reduce_bf16": True},
    # (Liger-kernel layouts are no longer compared: since runs measured their time and memory, they are planned
    # with a measured factor and their own memory margin, so the two planners differ on them by design.)
    "qwen3-8b, 8 x H200, torchtitan": {"model": "qwen3-8b", "gpu_type": "H200", "gpus": 8, "engine": "torchtitan"},
}


def _package_modules() -> dict[str, ModuleType]:
    return {name: module for name, module in sys.modules.items()
            if name == "openrecipes" or name.startswith("openrecipes.")}


def _swap_in(modules: dict[str, ModuleType]) -> None:
    for name in _package_modules():
        del sys.modules[name]
    sys.modules.update(modules)


# The planner's data files, copied over the baseline's so that both arms plan with the same calibration.
PLAN_DATA = ("calibration.yaml", "reference_points.yaml")  # a part's links are its hardware/gpus.yaml block
HELDOUT = REPO / "derived/heldout.json"  # read from derived/, or beside the planner's code before it moved there


def load_baseline(ref: str, folder: Path) -> tuple[ModuleType, dict[str, ModuleType]]:
    """The baseline's openrecipes.plan.predict and the modules it imported, leaving this checkout's in place; its
    planner data are this checkout's."""
    archive = subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar", ref, "src/openrecipes", "models",
                              "hardware", "recipes"],
                             check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(folder, filter="data")
    # `plan` reads the catalog (its engine and workload defaults): the baseline's recipes, with this checkout's run
    # folders as their evidence (too large to copy)
    (folder / "runs").symlink_to(REPO / "runs")
    for name in PLAN_DATA:
        shutil.copy(REPO / "src/openrecipes/plan" / name, folder / "src/openrecipes/plan" / name)
    (folder / "derived").mkdir(exist_ok=True)
    for where in (folder / "derived", folder / "src/openrecipes/plan"):
        shutil.copy(HELDOUT, where / HELDOUT.name)
    ours = _package_modules()
    _swap_in({})
    sys.path.insert(0, str(folder / "src"))
    try:
        import openrecipes.plan.predict as baseline
        theirs = _package_modules()
    finally:
        sys.path.remove(str(folder / "src"))
        _swap_in(ours)
    assert Path(baseline.__file__).is_relative_to(folder), "the baseline imported this checkout's package"
    return baseline, theirs


def timed(modules: dict[str, ModuleType], function: Callable[[], Any]) -> tuple[Any, float]:
    """What `function` returns and the CPU seconds it took, with these modules in sys.modules."""
    ours = _package_modules()
    _swap_in(modules)
    try:
        start = time.process_time()
        value = function()
        elapsed = time.process_time() - start
    finally:
        _swap_in(ours)
    return value, elapsed


def command(source: Path) -> tuple[str, float]:
    """`plan --top 0 --json` of COMMAND in a fresh process importing the package from `source` (and reading the
    catalog beside it): its text and the process's CPU seconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    text = subprocess.run([sys.executable, "-m", "openrecipes", "plan", *COMMAND], cwd=source.parent, check=True,
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(source)}).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return text, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def layout_key(row: dict) -> tuple:
    return (row["label"], row["recompute"], row["offload_fraction"], row["rows_per_microbatch"], row.get("compile"),
            row.get("reshard_after_forward"), tuple(row.get("kernels", ())), row.get("attention"), row.get("float8"))


def same_where_both(before: str, now: str) -> bool:
    """Every layout both `--json` texts list has the same object in both (and they share at least one)."""
    old = {layout_key(row): row for row in json.loads(before)}
    common = [row for row in json.loads(now) if layout_key(row) in old]
    return bool(common) and all(row == old[layout_key(row)] for row in common)


def _cell(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} s ({min(values):.2f}–{max(values):.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--baseline", default=BASELINE, help="git commit of the baseline planner")
    parser.add_argument("--tiny", action="store_true", help="one run, one request, --baseline HEAD")
    args = parser.parse_args()
    requests = dict(list(REQUESTS.items())[:1]) if args.tiny else REQUESTS
    if args.tiny:
        args.runs, args.baseline = 1, "HEAD"
    load = os.getloadavg()
    seconds: dict[tuple[str, str], list[float]] = {}
    layouts: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as folder:
        baseline, baseline_modules = load_baseline(args.baseline, Path(folder))
        arms = {"before": (baseline_modules, baseline, Path(folder)), "now": (_package_modules(), current, REPO)}
        for run in range(args.runs + 1):  # run 0 warms both arms up (files read, caches filled): not counted
            for label, kwargs in requests.items():
                texts = {}
                for arm, (modules, planner, root) in arms.items():
                    request, tables = planner.PlanRequest(**kwargs), planner.load_reference_tables(root)
                    _, predicted = timed(modules, partial(planner.predict, request, tables))
                    rows, exported = timed(modules, partial(planner.plan_table, **kwargs, root=root))
                    texts[arm] = json_text(rows)
                    if run:
                        seconds.setdefault((f"`predict`: {label}", arm), []).append(predicted)
                        seconds.setdefault((f"`plan_table`: {label}", arm), []).append(exported)
                assert same_where_both(texts["before"], texts["now"]), f"{label}: the planners disagree on a layout"
                layouts[label] = len(rows)
        sources = {"before": Path(folder) / "src", "now": REPO / "src"}
        for _ in range(args.runs):
            texts = {}
            for arm, source in sources.items():
                texts[arm], elapsed = command(source)
                seconds.setdefault(("command", arm), []).append(elapsed)
            assert same_where_both(texts["before"], texts["now"]), "the two commands disagree on a layout"
    end = os.getloadavg()
    print(f"## Planner speed — {datetime.date.today()} (benchmarks/plan_speed.py --runs {args.runs})\n")
    print(f"Machine: {os.cpu_count()} CPUs, {platform.processor() or platform.machine()}, Python "
          f"{platform.python_version()}; load average (1, 5, 15 min) {', '.join(f'{x:.2f}' for x in load)} at the "
          f"start, {', '.join(f'{x:.2f}' for x in end)} at the end. \"before\": the package at {args.baseline} "
          "with its own models/ and hardware/ (read from git by the benchmark); \"now\": this checkout. CPU "
          "seconds, median (min–max) of "
          f"{args.runs} runs per arm, the arms alternating; every layout both arms list identical in every run.\n")
    print("| what | layouts | before | now | before / now |\n|---|---:|---:|---:|---:|")
    for label in requests:
        for what in (f"`predict`: {label}", f"`plan_table`: {label}"):
            before, now = seconds[(what, "before")], seconds[(what, "now")]
            print(f"| {what} (one process, after a warm-up run per arm) | {layouts[label]:,} | {_cell(before)} | "
                  f"{_cell(now)} | **{statistics.median(before) / statistics.median(now):.2f}x** |")
    before, now = seconds[("command", "before")], seconds[("command", "now")]
    print(f"| `openrecipes plan {' '.join(COMMAND)}` (a fresh process per run, imports and writing included) | "
          f"{layouts[next(iter(REQUESTS))]:,} | {_cell(before)} | {_cell(now)} | "
          f"**{statistics.median(before) / statistics.median(now):.2f}x** |")


if __name__ == "__main__":
    main()
