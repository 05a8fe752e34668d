#!/usr/bin/env python3
"""The planner's held-out error on the public record by source and scale band, and per weak-scaling sweep the
efficiency lost from the smallest to the largest GPU count, published beside predicted
(openrecipes.plan.record_heldout).

    .venv/bin/python benchmarks/record_heldout.py

Reads the stored held-out predictions (derived/heldout.json, written by `openrecipes refresh`); prints
the two Markdown tables that docs/public-record.md and benchmarks/RESULTS.md carry (tests/test_record_heldout.py
requires them to match). A second or two: `--tiny` (what tests/test_benchmarks.py runs) is the same run.
"""

from __future__ import annotations

from openrecipes.catalog.paths import default_catalog_root
from openrecipes.catalog.store import load_catalog
from openrecipes.plan.record_heldout import report

if __name__ == "__main__":
    print(report(load_catalog(default_catalog_root())), end="")
