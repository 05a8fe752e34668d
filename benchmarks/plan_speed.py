"""The planner's speed: `plan_table` (predict every valid layout, rank them, export them as `plan --json` prints
them) now against the planner of an earlier commit, in one process, the two arms alternating.

The baseline is the package as it was at `--baseline` (default: the commit the planner's speedup started from),
read with `git archive` into a temporary folder and imported under the same name: while an arm runs, its own
`openrecipes` modules are the ones in `sys.modules`. Both arms plan from this checkout's catalog (models/,
hardware/), and every run asserts that the two give byte-identical `--json` text.

    .venv/bin/python benchmarks/plan_speed.py [--runs 3] [--baseline REF]   # prints a Markdown section for RESULTS.md
"""

from __future__ import annotations

import argparse
import datetime
import io
import os
import platform
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from openrecipes.jsonout import json_text
from openrecipes.plan import predict as current

REPO = Path(__file__).resolve().parents[1]
BASELINE = "7926fcd"  # main before the planner's speedup
REQUESTS: dict[str, dict[str, Any]] = {  # plan_table's arguments
    "gpt-oss-20b, 8 x H200, megatron, BF16 gradient buffers":
        {"model": "gpt-oss-20b", "gpu_type": "H200", "gpus": 8, "grad_reduce_bf16": True},
    "qwen3-8b, 8 x H200, torchtitan, two Liger kernels":
        {"model": "qwen3-8b", "gpu_type": "H200", "gpus": 8, "engine": "torchtitan",
         "kernels": ("liger-rmsnorm", "liger-fused-linear-cross-entropy")},
}


def _package_modules() -> dict[str, ModuleType]:
    return {name: module for name, module in sys.modules.items()
            if name == "openrecipes" or name.startswith("openrecipes.")}


def _swap_in(modules: dict[str, ModuleType]) -> None:
    for name in _package_modules():
        del sys.modules[name]
    sys.modules.update(modules)


def load_baseline(ref: str, folder: Path) -> tuple[ModuleType, dict[str, ModuleType]]:
    """The baseline's openrecipes.plan.predict and the modules it imported, leaving this checkout's in place."""
    archive = subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar", ref, "src/openrecipes"],
                             check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(folder, filter="data")
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


def timed(modules: dict[str, ModuleType], plan_table: Callable[..., list[Any]],
          kwargs: dict[str, Any]) -> tuple[list[Any], float]:
    """The rows and the seconds to plan and export them, with these modules in sys.modules."""
    ours = _package_modules()
    _swap_in(modules)
    try:
        start = time.perf_counter()
        rows = plan_table(**kwargs, root=REPO)
        elapsed = time.perf_counter() - start
    finally:
        _swap_in(ours)
    return rows, elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--baseline", default=BASELINE, help="git commit of the baseline planner")
    args = parser.parse_args()
    load = os.getloadavg()
    with tempfile.TemporaryDirectory() as folder:
        baseline, baseline_modules = load_baseline(args.baseline, Path(folder))
        arms = {"before": (baseline_modules, baseline.plan_table), "now": (_package_modules(), current.plan_table)}
        seconds: dict[tuple[str, str], list[float]] = {}
        layouts: dict[str, int] = {}
        for run in range(args.runs + 1):  # run 0 warms both arms up (files read, caches filled): not counted
            for label, kwargs in REQUESTS.items():
                texts = {}
                for arm, (modules, plan_table) in arms.items():
                    rows, elapsed = timed(modules, plan_table, kwargs)
                    texts[arm] = json_text(rows)
                    if run:
                        seconds.setdefault((label, arm), []).append(elapsed)
                assert texts["before"] == texts["now"], f"{label}: the two planners' --json text differs"
                layouts[label] = len(rows)
    end = os.getloadavg()
    print(f"## Planner speed — {datetime.date.today()} (benchmarks/plan_speed.py --runs {args.runs})\n")
    print(f"Machine: {os.cpu_count()} CPUs, {platform.processor() or platform.machine()}, Python "
          f"{platform.python_version()}; load average (1, 5, 15 min) {', '.join(f'{x:.2f}' for x in load)} at the "
          f"start, {', '.join(f'{x:.2f}' for x in end)} at the end. `plan_table` (predict, rank and export every "
          f"valid layout), {args.runs} runs per arm after one warm-up run each, the arms alternating in one process; "
          f"median (min–max). "
          f"\"before\": the package at {args.baseline} (read from git by the benchmark); \"now\": this checkout. "
          "Both arms' `--json` text is byte-identical in every run.\n")
    print("| request | layouts | before | now | before / now |\n|---|---:|---:|---:|---:|")
    for label in REQUESTS:
        before, now = seconds[(label, "before")], seconds[(label, "now")]
        print(f"| {label} | {layouts[label]:,} | {statistics.median(before):.2f} s ({min(before):.2f}–"
              f"{max(before):.2f}) | {statistics.median(now):.2f} s ({min(now):.2f}–{max(now):.2f}) | "
              f"**{statistics.median(before) / statistics.median(now):.2f}x** |")


if __name__ == "__main__":
    main()
