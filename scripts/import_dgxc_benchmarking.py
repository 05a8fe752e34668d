#!/usr/bin/env python3
"""Import NVIDIA's dgxc-benchmarking Expected Performance tables into recipes/ as published entries, one per table
cell, from the stored excerpts in data/record-sources/dgxc-benchmarking/<release>/ (scripts/store_record_excerpts.py).

    PYTHONPATH=src python scripts/import_dgxc_benchmarking.py [--root CATALOG] [--allow-removals]

Each cell becomes recipes/<model>/<gpu>/record-dgxc-<release>-<precision>-<GPUs>-<layout>-gbs<N>.yaml; the cells of
one table share a sweep id. The parsing and the entry live in openrecipes.record.dgxc, which `openrecipes
audit` uses to re-derive every entry from its excerpt.
"""

from __future__ import annotations

import sys
from pathlib import Path

from openrecipes.catalog.hardware import load_reference_tables
from openrecipes.record.dgxc import SOURCE, TAG, entry, parse, uncarded
from openrecipes.record.importer import Imported, ImportResult, Skipped, run_script, write_entries
from openrecipes.record.sources import excerpt_files, read_excerpt


def import_dgxc_benchmarking(root: Path, allow_removals: bool = False) -> ImportResult:
    """Import NVIDIA's dgxc-benchmarking Expected Performance tables into recipes/ as published entries."""
    tables = load_reference_tables(root)
    imported: list[Imported] = []
    skipped: list[Skipped] = []
    for relative in excerpt_files(root, SOURCE):
        excerpt = read_excerpt(root, relative)
        if (reason := uncarded(excerpt)) is not None:
            skipped.append(reason)
            continue
        for cell in parse(excerpt, skipped):
            path, data = entry(cell)
            imported.append(Imported(path, data, excerpt.where(cell.tokens_line)))
    comment = ("Imported by scripts/import_dgxc_benchmarking.py from NVIDIA/dgxc-benchmarking; figures copied "
               "exactly, never edited by hand:\nre-run the script to refresh (docs/public-record.md).")
    return write_entries(root, TAG, imported, skipped, comment, tables, allow_removals)


if __name__ == "__main__":
    sys.exit(run_script(import_dgxc_benchmarking))
