#!/usr/bin/env python3
"""What a public record of many weak-scaling sweeps costs a site build: the bundled catalog plus N synthetic
published entries (copies of the dgxc-benchmarking entries under new names and sweep ids), loaded and built by the
site code of site_scale.BASELINE_COMMIT and by this checkout, each arm in its own Python process, the arms taking
turns on one catalog (benchmarks/site_scale.py's arms).

    .venv/bin/python benchmarks/site_record_scale.py [--entries 10000] [--runs 2] [--tiny]   # a Markdown section

The copies have no stored prediction, so their plots draw the published line alone (the planner's points add an
error bar each, which this does not time).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shutil
import statistics
import tempfile
from pathlib import Path

from site_scale import BASELINE_COMMIT, TARGET_BUILD_S, run_arms

REPO = Path(__file__).resolve().parents[1]


def _catalog(root: Path, entries: int) -> None:
    for folder in ("recipes", "models", "hardware", "runs", "plans", "data", "rules", "schema"):
        if (REPO / folder).exists():
            shutil.copytree(REPO / folder, root / folder, symlinks=True)
    sources = sorted(REPO.glob("recipes/*/*/record-dgxc-*.yaml"))
    for i in range(entries):
        source = sources[i % len(sources)]
        copy = i // len(sources)
        text = source.read_text(encoding="utf-8").replace("    sweep: ", f"    sweep: copy{copy}-")
        (root / source.relative_to(REPO)).with_name(f"{source.stem}-copy{copy}.yaml").write_text(text, "utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=10000)
    parser.add_argument("--runs", type=int, default=2, help="builds of each arm, taken alternately")
    parser.add_argument("--tiny", action="store_true", help="5 entries, a build per arm (a check that it runs)")
    args = parser.parse_args()
    if args.tiny:
        args.entries, args.runs = 5, 1
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as temp:
        work = Path(temp)
        _catalog(work / "catalog", args.entries)
        # the baseline's code cannot read today's hardware/gpus.yaml: the tiny check builds this checkout's twice
        results = run_arms(work, args.runs, "HEAD" if args.tiny else BASELINE_COMMIT)
    load_after = os.getloadavg()

    def cell(arm: str, key: str) -> str:
        values = [r[key] for r in results[arm]]
        return f"{statistics.median(values):.1f} s ({min(values):.1f}–{max(values):.1f})"

    rows = [f"| {arm} | {cell(arm, 'load_s')} | {cell(arm, 'build_s')} | "
            f"{statistics.median(r['load_s'] + r['build_s'] for r in results[arm]):.1f} s | {cell(arm, 'load_cpu')} | "
            f"{cell(arm, 'build_cpu')} | {results[arm][-1]['pages']:,} | {results[arm][-1]['largest'][0]} "
            f"{results[arm][-1]['largest'][1] / 1024:,.0f} KB |" for arm in results]
    total = statistics.median(r["load_s"] + r["build_s"] for r in results["now"])
    print(f"""
## Site build with a public record of {args.entries:,} more entries — {datetime.date.today()}
(benchmarks/site_record_scale.py --entries {args.entries} --runs {args.runs})

Machine: {os.cpu_count()} CPUs, {platform.machine()}, Python {platform.python_version()}; load average (1, 5, 15 min)
{", ".join(f"{x:.2f}" for x in load_before)} before, {", ".join(f"{x:.2f}" for x in load_after)} after. The bundled
catalog plus {args.entries:,} synthetic published entries; each arm in its own process, {args.runs} run(s) each,
alternating; "before" is the site code of commit {BASELINE_COMMIT}, "now" this checkout. Median (range); CPU
seconds count the processes a build forks.

| arm | load, wall | build, wall | total, wall | load, CPU | build, CPU | pages | largest page |
|---|---:|---:|---:|---:|---:|---:|---|
{chr(10).join(rows)}

Now {"meets" if total <= TARGET_BUILD_S else "MISSES"} the target (load + build ≤ {TARGET_BUILD_S:.0f} s wall: \
{total:.1f} s).
""")


if __name__ == "__main__":
    main()
