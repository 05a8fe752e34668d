#!/usr/bin/env python3
"""Import torchtitan's published benchmarks into recipes/ as published entries, from the stored copies in
data/public-record/ (manifest.yaml names their commit).

    PYTHONPATH=src python scripts/import_torchtitan.py [--root CATALOG] [--allow-removals]

Reads benchmarks/llama3_h100_202412_torchtitan.md (December 2024, Llama 3.1 8B/70B/405B on up to 512 H100s),
benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md (June 2025, vanilla and async TP) and docs/performance.md (where
the December 2024 tables lived before; its rows that equal the benchmark file's are reported, not imported twice).
Each row becomes recipes/<model>/h100/record-titan-<file>-<precision>-<layout>.yaml.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from openrecipes.catalog.hardware import ReferenceTables, load_reference_tables
from openrecipes.catalog.model import MAX_COUNT, MAX_DEGREE
from openrecipes.errors import UserError
from openrecipes.record.importer import (
    Imported,
    ImportResult,
    Skipped,
    SourceFile,
    Table,
    TableRow,
    entry_name,
    markdown_tables,
    parse_count,
    parse_figure,
    parse_precision,
    run_script,
    source_file,
    with_variants,
    write_entries,
)

REPOSITORY = "pytorch/torchtitan"
FILES = {  # path -> the short name its entries carry
    "benchmarks/llama3_h100_202412_torchtitan.md": "202412",
    "benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md": "202506",
}
EARLIER_COPY = ("docs/performance.md", "benchmarks/llama3_h100_202412_torchtitan.md")
TAG = "titan"  # file names only: recipes/<model>/<gpu>/record-titan-<release>-...
# The files describe their machines in prose ("Grand Teton ... 8 NVIDIA H100 GPUs ... 96GB HBM2e ... 500W"); the
# import refuses a file whose hardware text it does not recognise rather than guess another GPU.
HARDWARE_TEXT = ("Grand Teton", "96GB HBM2e", "500W power limit")
SYSTEM = "H100 SXM with 96 GB HBM2e at a 500 W power limit, 8 per host (Grand Teton), 400 Gb/s RDMA per GPU"
# The tables without a sequence-length column do not state it; torchtitan's train_configs/llama3_{8b,70b,405b}.toml
# at the benchmarked commit 9dec370 all set seq_len = 8192.
DEFAULT_SEQ = 8192
DEFAULT_SEQ_NOTE = ("The table does not state the sequence length; 8,192 is seq_len in torchtitan's "
                    "train_configs/llama3_{8b,70b,405b}.toml at the benchmarked commit.")
QUANTIZATION = {"None (bfloat16)": "bf16", "float8 tensorwise": "fp8-tensorwise", "float8 rowwise": "fp8-rowwise"}
# "Float8" in the December 2024 tables: torchao's dynamic tensorwise scaling, the only float8 recipe torchtitan
# 9dec370 configures (train_configs/llama3_405b.toml: precompute_float8_dynamic_scale_for_fsdp).
FLOAT8 = "fp8-tensorwise"
THROUGHPUT = ("TPS/GPU", "Vanilla TP tokens/sec", "Async TP tokens/sec")


def _match(pattern: str, text: str, where: str, most: int = MAX_DEGREE) -> int | None:
    """The count `pattern` finds in a caption or cell, read strictly (parse_count); None where it finds none."""
    found = re.search(pattern, text)
    return parse_count(found.group(1), where, most=most) if found else None


def _versions(tables: list[Table]) -> str:
    """'torchtitan 9dec370 with torch 1963fc8 and torchao eab345c (2024/12/26)' from the file's versions table."""
    for table in tables:
        if table.header[:2] == ("repo", "commit"):
            commits = {row.cells[0]: (re.sub(r"^\[([0-9a-f]+)\].*$", r"\1", row.cells[1]), row.cells[2])
                       for row in table.rows}
            if "torchtitan" in commits:
                others = " and ".join(f"{repo} {commit}" for repo, (commit, _) in commits.items()
                                      if repo != "torchtitan")
                return f"torchtitan {commits['torchtitan'][0]} with {others} ({commits['torchtitan'][1]})"
    raise UserError("the file has no versions table (| repo | commit | date |) naming torchtitan; fix the file")


def _runs(table: Table, row: TableRow, where: str,
          tables: ReferenceTables) -> list[tuple[str, int | float, list[str], str | None]]:
    """(column, tokens/s per GPU, row techniques, precision from the row) for each throughput column of the row."""
    first = row.cells[0]
    runs = []
    for column in THROUGHPUT:
        value = table.column(row, column)
        if value is None:
            continue
        techniques = [t.strip() for t in first.split("+")] if table.header[0] == "Techniques" else []
        if table.header[0] == "Schedule":
            techniques = [f"{first} pipeline schedule"]
        if column == "Async TP tokens/sec":
            techniques.append("AsyncTP")
        precision = None
        if table.header[0] == "Quantization":
            precision = parse_precision(first, "H100", f"{where}: Quantization", QUANTIZATION, tables)
        runs.append((column, parse_figure(value, f"{where}: {column}"), techniques, precision))
    if not runs:
        raise UserError(f"{where}: the table has no throughput column ({', '.join(THROUGHPUT)}); fix the header")
    return runs


def _entries(source: SourceFile, short: str, table: Table, version: str, tables: ReferenceTables,
             skipped: list[Skipped]) -> list[Imported]:
    caption = table.caption or table.headings[-1]
    model_size = re.search(r"Llama ?3(?:\.1)? (\d+)[Bb]", caption)
    at_caption = f"{source.shown}:{table.line}: caption"
    gpus = _match(r"(\d+) (?:GPUs|H100s)", caption, at_caption)
    if model_size is None or gpus is None:
        raise UserError(f"{source.shown}:{table.line}: the caption '{caption}' names no Llama 3 model size or GPU "
                        "count; fix the caption")
    model = f"llama-3.1-{model_size.group(1).lower()}b"
    recompute = ("selective" if re.search(r"[Ss]elective activation checkpointing|SAC", caption)
                 else "full" if re.search(r"[Ff]ull (?:activation checkpointing|AC)", caption) else None)
    caption_techniques = [t for t in ("torch.compile", "Float8", "AsyncTP", "1F1B") if t in caption]
    out = []
    for row in table.rows:
        where = f"{source.shown}:{row.line}"
        if model not in tables.models:
            skipped.append(Skipped(model, where, f"the card {model} is not in models/ yet"))
            continue
        parallel = row.cells[0] if table.header[0] == "Parallelism" else ""
        at_cell = f"{where}: Parallelism"
        tp = _match(r"TP[ =]?(\d+)", caption, at_caption) or 1
        pp = _match(r"PP ?(\d+)", caption, at_caption) or 1
        cp = _match(r"CP (\d+)", parallel, at_cell) or _match(r"CP[ =](\d+)", caption, at_caption) or 1
        fsdp = _match(r"FSDP (\d+)", parallel, at_cell) or _match(r"FSDP[ =](\d+)", caption, at_caption)
        if fsdp is None:  # "1D Parallelism (FSDP)" on N GPUs: every GPU is an FSDP rank
            fsdp = gpus // (tp * pp * cp)
        seq_cell = table.column(row, "Sequence Length")
        memory = table.column(row, "Memory(GiB)")
        for column, tokens, row_techniques, row_precision in _runs(table, row, where, tables):
            techniques = list(dict.fromkeys([*caption_techniques, *row_techniques]))
            precision = row_precision or (FLOAT8 if "Float8" in techniques else "bf16")
            seq = (parse_count(seq_cell, f"{where}: Sequence Length", most=MAX_COUNT) if seq_cell is not None
                   else DEFAULT_SEQ)
            notes = [f"Copied from torchtitan's published benchmarks ({version}); the layout and figures are as "
                     "published. No log or loss curve is published, so this entry is never ranked with measured "
                     "recipes. The GPUs are H100 SXM with 96 GB HBM2e held at 500 W, slower than the 700 W H100 SXM "
                     "whose peak hardware/gpus.yaml lists."]
            if column != "TPS/GPU":
                notes.append(f"The figure is the row's '{column}' column; the table's tokens/sec are per GPU (the "
                             "same 70B layout reads 829-876 TPS/GPU in the December 2024 tables).")
            if seq_cell is None:
                notes.append(DEFAULT_SEQ_NOTE)
            if precision == FLOAT8 and row_precision is None:
                notes.append("'Float8' is torchao's dynamic tensorwise FP8 scaling, the float8 recipe torchtitan "
                             "configured at that commit.")
            # A row's own techniques tell it from the other rows of its table (what the caption names is common to
            # them all, and Float8 is in the precision already).
            slug = "-".join(re.sub(r"[^a-z0-9]+", "", t.removesuffix(" pipeline schedule").lower())
                            .replace("torchcompile", "compile").replace("interleaved", "i")
                            for t in row_techniques if t not in ("FSDP", "2D", "Float8"))
            name = entry_name(TAG, short, "pretrain", precision, gpus, {"fsdp": fsdp, "tp": tp, "pp": pp, "cp": cp},
                              [*([f"seq{seq}"] if seq != DEFAULT_SEQ else []), *([slug] if slug else [])])
            data: dict[str, Any] = {
                "schema_version": 1, "kind": "published_summary", "model": model,
                "gpu": {"type": "H100", "count": gpus},
                "result": {"tokens_per_s_per_gpu": tokens, "usd_per_million_tokens": None},
                "source": source.cite(caption, row.line),
                "note": " ".join(notes),
                "published": {
                    "engine": "torchtitan", "engine_version": version, "task": "pretrain",
                    "model_as_published": model_size.group(0), "system_as_published": SYSTEM,
                    "precision": precision, "precision_as_published": row.cells[0] if row_precision else
                    ("Float8" if "Float8" in techniques else "no Float8 (BF16)"),
                    "seq_length": seq,
                    "global_batch": _match(r"global batch size (\d+)", caption, at_caption, MAX_COUNT),
                    "micro_batch": None, "local_batch": _match(r"[Ll]ocal batch size (\d+)", caption,
                                                                       at_caption, MAX_COUNT),
                    "gradient_accumulation": None,
                    "layout": {"tp": tp, "pp": pp, "vp": None, "cp": cp, "ep": None, "etp": None, "fsdp": fsdp},
                    "recompute": recompute, "techniques": [t for t in techniques if t not in ("FSDP", "2D")],
                    "model_tflops_per_gpu": None,
                    "memory_gib": (parse_figure(memory, f"{where}: Memory(GiB)")
                                   if memory is not None and column == "TPS/GPU" else None),
                    "reference": {"repository": source.repository, "path": source.path, "commit": source.commit,
                                  "table": caption, "row": row.text, "line": row.line},
                },
            }
            out.append(Imported(Path("recipes") / model / "h100" / f"{name}.yaml", data, where))
    return out


def _benchmark_tables(source: SourceFile) -> tuple[list[Table], str]:
    text = source.text()
    missing = [t for t in HARDWARE_TEXT if t not in text]
    if missing:
        raise UserError(f"{source.shown}: the hardware description lacks '{missing[0]}'; the import knows only "
                        "torchtitan's Grand Teton H100 runs")
    tables = markdown_tables(text, Path(source.shown))
    return [t for t in tables if any(c in t.header for c in THROUGHPUT)], _versions(tables)


def import_torchtitan(root: Path, allow_removals: bool = False) -> ImportResult:
    """Import torchtitan's published benchmarks into recipes/ as published entries."""
    tables = load_reference_tables(root)
    imported: list[Imported] = []
    skipped: list[Skipped] = []
    rows_by_key: dict[tuple[str, str], str] = {}
    for path, short in FILES.items():
        source = source_file(root, REPOSITORY, path)
        benchmark_tables, version = _benchmark_tables(source)
        for table in benchmark_tables:
            for row in table.rows:
                rows_by_key[(table.caption, row.text)] = f"{source.shown}:{row.line}"
            imported.extend(_entries(source, short, table, version, tables, skipped))
    earlier = source_file(root, REPOSITORY, EARLIER_COPY[0])
    for table in markdown_tables(earlier.text(), Path(earlier.shown)):
        for row in table.rows if any(c in table.header for c in THROUGHPUT) else []:
            where = f"{earlier.shown}:{row.line}"
            if (table.caption, row.text) not in rows_by_key:
                raise UserError(f"{where}: this row is not in {EARLIER_COPY[1]}; the earlier copy and the benchmark "
                                "file differ, so import it from its own file (add it to FILES)")
            size = re.search(r"Llama ?3(?:\.1)? \d+[Bb]", table.caption)
            moved_to = rows_by_key[(table.caption, row.text)]
            skipped.append(Skipped(size.group(0) if size else table.caption, where,
                                   f"the same row as {moved_to} (torchtitan moved the table there)"))
    comment = (f"Imported by scripts/import_torchtitan.py from {REPOSITORY}; figures copied exactly, never edited by "
               "hand:\nre-run the script to refresh (docs/public-record.md).")
    return write_entries(root, TAG, with_variants(imported, tables), skipped, comment, tables, allow_removals)


if __name__ == "__main__":
    sys.exit(run_script(import_torchtitan))
