"""What auditing costs a site build: `audit_catalog` (the evidence levels the site shows) against loading and
validating the same catalog, in one process, on the bundled catalog and on benchmarks/site_build.py's synthetic
catalog (seed recipes copied with their commands, so every copy is one configuration with its seed: the
worst case for the duplicate check, every recipe has a finding).

    .venv/bin/python benchmarks/audit.py [--recipes 1000] [--repeats 3] [--tiny]   # prints a Markdown section
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

from openrecipes.audit.review import audit_catalog
from openrecipes.catalog.paths import bundled_root
from openrecipes.catalog.store import load_catalog

HERE = Path(__file__).parent


def _synthetic_writer():
    spec = importlib.util.spec_from_file_location("site_build_benchmark", HERE / "site_build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.write_synthetic_catalog


def median_seconds(function, *args, repeats: int) -> tuple[object, float]:
    times, value = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        value = function(*args)
        times.append(time.perf_counter() - start)
    return value, statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipes", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tiny", action="store_true", help="5 synthetic recipes, once (a check that it runs)")
    args = parser.parse_args()
    if args.tiny:
        args.recipes, args.repeats = 5, 1
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        _synthetic_writer()(Path(folder), args.recipes)
        for name, root in (("bundled", bundled_root()), (f"synthetic ({args.recipes:,} recipes)", Path(folder))):
            catalog, load_s = median_seconds(load_catalog, root, repeats=args.repeats)
            reports, audit_s = median_seconds(audit_catalog, catalog, repeats=args.repeats)
            levels = {level: sum(1 for r in reports.values() if r.evidence == level)
                      for level in ("re-derived", "author-reported", "failed")}
            rows.append((name, len(catalog.entries), load_s, audit_s, levels))
    print(f"\n## Audit within a site build — {datetime.date.today()} (benchmarks/audit.py, median of {args.repeats})\n")
    print(f"Machine: {os.cpu_count()} CPUs, Python {platform.python_version()}, load average "
          f"{os.getloadavg()[0]:.1f} at the end.\n")
    print("| catalog | entries | load + validate | audit_catalog | audit / load | evidence |")
    print("|---|---:|---:|---:|---:|---|")
    for name, entries, load_s, audit_s, levels in rows:
        shown = ", ".join(f"{count} {level}" for level, count in levels.items() if count)
        print(f"| {name} | {entries:,} | {load_s:.2f} s | {audit_s:.2f} s | {audit_s / load_s:.2f}x | {shown} |")


if __name__ == "__main__":
    main()
