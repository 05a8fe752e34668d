"""`openrecipes plan --top 0 --json` on gpt-oss-20b, 8 x H200 (every valid layout, about 14,000): planning, building
the exported rows, and writing them, with the writer the command uses (pydantic-core, in Rust) against Python's
json module with an indent (what it used before; Python's encoder runs in pure Python whenever it indents). Both
writers run on the same rows, alternately, in one process; the texts must be byte-identical.

    .venv/bin/python benchmarks/plan_json.py [--runs 3] [--tiny]     # prints a Markdown section for RESULTS.md
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import statistics
import time
from typing import Any

from openrecipes.jsonout import json_text
from openrecipes.plan.predict import PlanRequest, predict


def python_json_text(rows: list[Any]) -> str:
    """The previous writer: the rows as dicts, non-finite floats as null, json.dumps with an indent of 2."""
    def finite(value: Any) -> Any:
        if isinstance(value, float):
            return value if math.isfinite(value) else None
        if isinstance(value, dict):
            return {key: finite(item) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return [finite(item) for item in value]
        return value

    return json.dumps(finite([row.model_dump() for row in rows]), indent=2, allow_nan=False)


def exported(predictions: list[Any]) -> list[Any]:
    return [prediction.exported() for prediction in predictions]


def timed(function, *args) -> tuple[Any, float]:
    start = time.perf_counter()
    value = function(*args)
    return value, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--tiny", action="store_true", help="one run (a check that it runs)")
    args = parser.parse_args()
    runs = 1 if args.tiny else args.runs
    load = os.getloadavg()[0]
    request = PlanRequest("gpt-oss-20b", "H200", 8)
    seconds: dict[str, list[float]] = {"plan": [], "export": [], "pydantic-core": [], "json": []}
    for _ in range(runs):
        predictions, elapsed = timed(predict, request)
        seconds["plan"].append(elapsed)
        rows, elapsed = timed(exported, predictions)
        seconds["export"].append(elapsed)
        ours, elapsed = timed(json_text, rows)
        seconds["pydantic-core"].append(elapsed)
        before, elapsed = timed(python_json_text, rows)
        seconds["json"].append(elapsed)
        assert ours == before, "the two writers disagree"
    median = {name: statistics.median(values) for name, values in seconds.items()}
    spread = {name: f"{min(values):.2f}–{max(values):.2f}" for name, values in seconds.items()}
    print(f"## `plan --top 0 --json` writer — {datetime.date.today()} (benchmarks/plan_json.py --runs {runs})\n")
    print(f"Machine: {os.cpu_count()} CPUs, {platform.processor() or platform.machine()}, Python "
          f"{platform.python_version()}; load average {load:.2f} at the start, {os.getloadavg()[0]:.2f} at the end. "
          f"gpt-oss-20b on 8 x H200: {len(rows):,} layouts, {len(ours.encode()) / 2**20:.1f} MiB of JSON, "
          "byte-identical from both writers.\n")
    print("| step | median (min–max) |\n|---|---:|")
    for name, label in (("plan", "predict every layout"), ("export", "exported rows (PredictedLayout)"),
                        ("pydantic-core", "write: pydantic-core (now)"), ("json", "write: json.dumps, indent 2 "
                                                                                 "(before)")):
        print(f"| {label} | {median[name]:.2f} s ({spread[name]}) |")
    print(f"\nWriting: **{median['json'] / median['pydantic-core']:.1f}x** faster; the command as a whole "
          f"(plan + export + write): {sum(median[n] for n in ('plan', 'export', 'json')):.2f} s before, "
          f"{sum(median[n] for n in ('plan', 'export', 'pydantic-core')):.2f} s now.")


if __name__ == "__main__":
    main()
