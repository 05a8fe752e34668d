#!/usr/bin/env python3
"""What a public record of many weak-scaling sweeps costs a site build: the bundled catalog plus N synthetic
published entries (copies of the dgxc-benchmarking entries under new names and sweep ids), loaded and built once
per arm in this process, the bundled catalog alone first as the baseline.

    .venv/bin/python benchmarks/site_record_scale.py [--entries 10000]   # prints a Markdown section

The copies have no stored prediction, so their plots draw the published line alone (the planner's points add an
error bar each, which this does not time).
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import tempfile
import time
from pathlib import Path

from openrecipes.catalog.store import load_catalog
from openrecipes.site.build import build_site

REPO = Path(__file__).resolve().parents[1]


def _catalog(root: Path, entries: int) -> None:
    for folder in ("recipes", "models", "hardware", "runs", "plans", "data"):
        if (REPO / folder).exists():
            shutil.copytree(REPO / folder, root / folder, symlinks=True)
    sources = sorted(REPO.glob("recipes/*/*/record-dgxc-*.yaml"))
    for i in range(entries):
        source = sources[i % len(sources)]
        copy = i // len(sources)
        text = source.read_text(encoding="utf-8").replace("    sweep: ", f"    sweep: copy{copy}-")
        (root / source.relative_to(REPO)).with_name(f"{source.stem}-copy{copy}.yaml").write_text(text, "utf-8")


def _cpu() -> float:
    """CPU seconds of this process and of the processes it forked and waited for (a build may use every core)."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def _build(root: Path, out: Path) -> tuple[float, float, float, float, int, tuple[str, int]]:
    start, start_cpu = time.perf_counter(), _cpu()
    catalog = load_catalog(root)
    loaded, loaded_cpu = time.perf_counter(), _cpu()
    report = build_site(catalog, out)
    return (loaded - start, time.perf_counter() - loaded, loaded_cpu - start_cpu, _cpu() - loaded_cpu,
            len(report.pages), report.largest)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=10000)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as temp:
        for entries in (0, args.entries):
            root = Path(temp) / f"catalog-{entries}"
            _catalog(root, entries)
            load, build, load_cpu, build_cpu, pages, (largest, size) = _build(root, Path(temp) / f"site-{entries}")
            rows.append(f"| {entries:,} | {load:.1f} s | {build:.1f} s | {load + build:.1f} s | {load_cpu:.1f} s | "
                        f"{build_cpu:.1f} s | {pages:,} | {largest} {size / 1024:,.0f} KB |")
    print(f"## Site build with a large public record — (benchmarks/site_record_scale.py --entries {args.entries})\n")
    print(f"Machine: {os.cpu_count()} CPUs, {platform.machine()}, Python {platform.python_version()}; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())} at the end. Wall and CPU seconds (CPU with the processes "
          "a build forks), one run per arm.\n")
    print("| synthetic entries | load | build | total (wall) | load CPU | build CPU | pages | largest page |\n"
          "|---:|---:|---:|---:|---:|---:|---:|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
