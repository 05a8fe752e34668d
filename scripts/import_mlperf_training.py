#!/usr/bin/env python3
"""Import MLPerf Training results (Llama 3.1 8B and 405B pre-training, v5.0 and v5.1) into recipes/ as published
entries, one per submission (the median of its runs), from the stored excerpts in data/record-sources/mlperf-training/
(scripts/store_record_excerpts.py).

    PYTHONPATH=src python scripts/import_mlperf_training.py [--root CATALOG] [--allow-removals]

Each submission becomes
recipes/<model>/<gpu>/record-mlperf-<round>-<precision>-<GPUs>-<layout>-<submitter>-<system tag>.yaml (the tag: six hex digits
of the system's folder name).
The parsing and the entry live in openrecipes.record.mlperf, which `openrecipes audit` uses to re-derive
every entry from its excerpts.
"""

from __future__ import annotations

import sys
from pathlib import Path

from openrecipes.catalog.hardware import load_reference_tables
from openrecipes.record.importer import Imported, ImportResult, Skipped, run_script, write_entries
from openrecipes.record.mlperf import TAG, entry, submissions


def import_mlperf_training(root: Path, allow_removals: bool = False) -> ImportResult:
    """Import MLPerf Training results into recipes/ as published entries."""
    tables = load_reference_tables(root)
    skipped: list[Skipped] = []
    imported = []
    for submission in submissions(root, skipped):
        path, data = entry(submission)
        imported.append(Imported(path, data, submission.runs[0].excerpt.shown))
    comment = ("Imported by scripts/import_mlperf_training.py from mlcommons/training_results_*; figures derived "
               "from the stored MLLOG excerpts, never edited by hand:\nre-run the script to refresh "
               "(docs/public-record.md).")
    return write_entries(root, TAG, imported, skipped, comment, tables, allow_removals)


if __name__ == "__main__":
    sys.exit(run_script(import_mlperf_training))
