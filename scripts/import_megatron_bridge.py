#!/usr/bin/env python3
"""Import Megatron-Bridge's performance summary and its archive (every NeMo container release they keep) into
recipes/ as published entries, from the stored copies in data/public-record/ (manifest.yaml names their commit).

    PYTHONPATH=src python scripts/import_megatron_bridge.py [--root CATALOG] [--allow-removals]

Each table row becomes recipes/<model>/<gpu>/record-mbridge-<release>-<task>-<precision>-<layout>.yaml; a cell
written "A (B)" is two published runs (the release's note says what the parenthesised one changes). Rows whose model
has no card, or whose table publishes no precision, are reported and skipped.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from openrecipes.catalog.hardware import ReferenceTables
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
    parse_optional_count,
    parse_precision,
    run_script,
    source_file,
    with_variants,
    write_entries,
)

REPOSITORY = "NVIDIA-NeMo/Megatron-Bridge"
FILES = ("docs/performance-summary.md", "docs/performance-summary-archive.md")
TAG = "mbridge"
SYSTEMS = {"DGX-H100": "H100", "DGX-B200": "B200", "DGX-B300": "B300", "DGX-GB200": "GB200", "DGX-GB300": "GB300"}
TASKS = {"Pre-Training Performance": "pretrain", "SFT Performance": "sft", "LoRA Performance": "lora"}
# FP8 alone: the releases from 26.02 on do not say which FP8 scaling recipe ran. FP8-MX is MXFP8 on Blackwell; the
# 25.11 note says H100's parenthesised FP8 is 128x128 weight / 1x128 activation blocks, which is blockwise FP8.
PRECISIONS = {"BF16": "bf16", "FP8": "fp8", "FP8-CS": "fp8-current-scaling", "FP8-DS": "fp8-delayed-scaling",
              "MXFP8": "mxfp8", "NVFP4": "nvfp4"}
_LLAMA3 = ("Megatron-Bridge's {name} recipe is Llama 3 {size}; Llama 3.1 {size} has the same layers, widths, heads and "
           "vocabulary (it changes only RoPE scaling and the context length), so the entry uses the llama-3.1-{lower} "
           "card, whose FLOPs per token are the same.")
MODELS: dict[str, tuple[str, str | None]] = {
    "LLAMA3_8B": ("llama-3.1-8b", _LLAMA3.format(name="LLAMA3_8B", size="8B", lower="8b")),
    "LLAMA3_70B": ("llama-3.1-70b", _LLAMA3.format(name="LLAMA3_70B", size="70B", lower="70b")),
    "LLAMA3.1_405B": ("llama-3.1-405b", None),
    "DeepSeekV3": ("deepseek-v3", None),
    "GPT OSS 120B": ("gpt-oss-120b", None),
    "Qwen3_30B_a3B": ("qwen3-30b-a3b", None),
    "Qwen3_235B_a22B": ("qwen3-235b-a22b", None),
    "Kimi_K2": ("kimi-k2", None),
}
# Cells that name one thing for both runs of an "A (B)" row: a GPU cell reading "256 (512)" is refused, not split.
ONE_VALUE = ("#-GPUs", "System")
_VARIANT = re.compile(r"^(\S+)\s+\((\S+)\)$")
_FOOTNOTE = re.compile(r"\[\^([^\]]+)\]")


def _precision(cell: str, gpu: str, where: str, tables: ReferenceTables) -> str:
    spellings = {**PRECISIONS, "FP8-MX": "fp8-blockwise" if gpu == "H100" else "mxfp8"}
    return parse_precision(cell, gpu, f"{where}: Precision", spellings, tables)


def _variants(table: Table, row: TableRow, model_column: str | None) -> list[dict[str, str]]:
    """The row's runs: one, or two where cells read "A (B)" (the model cell's own parentheses name the model)."""
    first: dict[str, str] = {}
    second: dict[str, str] = {}
    split = False
    for name, cell in zip(table.header, row.cells, strict=True):
        plain = _FOOTNOTE.sub("", cell).strip()
        match = _VARIANT.match(plain) if name not in (model_column, *ONE_VALUE) else None
        if match:
            split = True
            first[name], second[name] = match.group(1), match.group(2)
        else:
            first[name] = second[name] = plain
    return [first, second] if split else [first]


def _count(cells: dict[str, str], column: str, where: str, least: int = 1) -> int:
    return parse_count(cells[column], f"{where}: {column}", least, MAX_COUNT if column in BATCHES else MAX_DEGREE)


def _optional(cells: dict[str, str], column: str, where: str) -> int | None:
    return parse_optional_count(cells.get(column, "n/a"), f"{where}: {column}")


BATCHES = ("GBS", "MBS", "GA", "Sequence Length")  # counts up to 2^53; GPUs and degrees up to 2^20


class _Release:
    """One file's context while reading it: its headings, footnotes and notes."""

    def __init__(self, source: SourceFile, text: str) -> None:
        self.source = source
        self.footnotes = dict(re.findall(r"^\[\^([^\]]+)\]:\s*(.+)$", text, flags=re.M))
        self.lines = text.splitlines()

    def parenthesis_note(self, table: Table) -> str | None:
        """The release's bullet saying what its parenthesised figures are (it follows the release's last table)."""
        for line in self.lines[table.line:]:
            if line.startswith("## "):
                return None
            if line.startswith("- ") and "parenthes" in line:
                return line[2:].strip()
        return None


def _rows(release: _Release, table: Table, tables: ReferenceTables, imported: list[Imported],
          skipped: list[Skipped]) -> None:
    experts = {name: int(card.architecture.get("experts") or 0) for name, card in tables.models.items()}
    source = release.source
    version = next((m.group(1) for h in table.headings if (m := re.match(r"^([0-9.]+) NeMo Container$", h))), None)
    task = next((TASKS[h] for h in table.headings if h in TASKS), None)
    if version is None or task is None:
        return  # not a performance table (the page has none, but a future one may add a legend)
    group = table.headings[-1]
    model_column = "Model" if "Model" in table.header else None
    for row in table.rows:
        where = f"{source.shown}:{row.line}"
        for needed in ("#-GPUs", "GBS", "MBS", "Sequence Length", "TP", "PP", "CP", "Tokens / sec / GPU"):
            if needed not in table.header:
                raise UserError(f"{where}: the table has no '{needed}' column; fix the table header")
        variants = _variants(table, row, model_column)
        for index, cells in enumerate(variants):
            published_model = cells[model_column] if model_column else group.removeprefix("Model:").strip()
            system = cells.get("System") or group.removeprefix("System:").strip()
            base = re.sub(r"\s*\(.*\)$", "", published_model).strip()
            if base not in MODELS:
                skipped.append(Skipped(published_model, where, "no model card in models/ for this model"))
                continue
            model, alias_note = MODELS[base]
            if model not in experts:
                skipped.append(Skipped(published_model, where, f"the card {model} is not in models/ yet"))
                continue
            if "Precision" not in cells:
                skipped.append(Skipped(published_model, where, f"the {version} table publishes no precision column"))
                continue
            if system not in SYSTEMS:
                raise UserError(f"{where}: unknown system '{system}'; known: {', '.join(SYSTEMS)}")
            gpu = SYSTEMS[system]
            precision = _precision(cells["Precision"], gpu, where, tables)
            imported.append(_entry(release, table, row, cells, index if len(variants) > 1 else None, model,
                                   alias_note, gpu, precision, version, task, published_model, system, where,
                                   experts[model] > 0))


def _entry(release: _Release, table: Table, row: TableRow, cells: dict[str, str], variant: int | None, model: str,
           alias_note: str | None, gpu: str, precision: str, version: str, task: str, published_model: str,
           system: str, where: str, moe_model: bool) -> Imported:
    source = release.source
    gpus = _count(cells, "#-GPUs", where)
    layout = {
        "tp": _count(cells, "TP", where), "pp": _count(cells, "PP", where), "vp": _optional(cells, "VP", where),
        "cp": _count(cells, "CP", where), "ep": _optional(cells, "EP", where), "etp": None,
        "fsdp": _count(cells, "FSDP", where, least=0) if "FSDP" in cells else None,
    }
    global_batch, micro_batch = _count(cells, "GBS", where), _count(cells, "MBS", where)
    tflops = cells.get("Model TFLOP / sec / GPU")
    section = " > ".join(table.headings)
    notes = [f"Copied from Megatron-Bridge's performance summary for the NeMo {version} container ({system}, "
             f"{gpus} GPUs); the layout and figures are as published. No command, log or loss curve is published, so "
             "this entry is never ranked with measured recipes."]
    if alias_note:
        notes.append(alias_note)
    if "(" in published_model:
        notes.append(f"The source names the model '{published_model}'.")
    if variant is not None:
        which = "first" if variant == 0 else "parenthesised"
        explained = release.parenthesis_note(table)
        notes.append(f"The row publishes two runs as 'A (B)'; this is its {which} one."
                     + (f" The source: \"{explained}\"" if explained else ""))
    moe = release.footnotes.get("moe-training-note")
    if moe and moe_model and task == "pretrain":
        notes.append(f"The source: \"{moe}\"")
    for key in _FOOTNOTE.findall(row.text):
        if key in release.footnotes:
            notes.append(f"The source's footnote: \"{release.footnotes[key]}\"")
    name = entry_name(TAG, version, task, precision, gpus,
                      {key: layout[key] for key in ("tp", "pp", "cp", "vp", "ep", "fsdp")},
                      [f"gbs{global_batch}", f"mbs{micro_batch}", *(["mtp"] if "w/ MTP" in published_model else [])])
    data: dict[str, Any] = {
        "schema_version": 1, "kind": "published_summary", "model": model,
        "gpu": {"type": gpu, "count": gpus},
        "result": {"tokens_per_s_per_gpu": parse_figure(cells["Tokens / sec / GPU"], f"{where}: Tokens / sec / GPU"),
                   "usd_per_million_tokens": None},
        "source": source.cite(section, row.line),
        "note": " ".join(notes),
        "published": {
            "engine": "megatron-bridge", "engine_version": f"NeMo container {version}", "task": task,
            "model_as_published": published_model, "system_as_published": system, "precision": precision,
            "precision_as_published": cells["Precision"], "seq_length": _count(cells, "Sequence Length", where),
            "global_batch": global_batch, "micro_batch": micro_batch,
            "local_batch": None,
            "gradient_accumulation": _count(cells, "GA", where) if "GA" in cells else None,
            "layout": layout, "recompute": None, "techniques": [],
            "model_tflops_per_gpu": parse_figure(tflops, f"{where}: Model TFLOP / sec / GPU") if tflops else None,
            "reference": {"repository": source.repository, "path": source.path, "commit": source.commit,
                          "table": section, "row": row.text, "line": row.line},
        },
    }
    return Imported(Path("recipes") / model / gpu.lower() / f"{name}.yaml", data, where)


def import_megatron_bridge(root: Path, allow_removals: bool = False) -> ImportResult:
    """Import Megatron-Bridge's performance summary and archive into recipes/ as published entries."""
    from openrecipes.catalog.hardware import load_reference_tables

    tables = load_reference_tables(root)
    imported: list[Imported] = []
    skipped: list[Skipped] = []
    for path in FILES:
        source = source_file(root, REPOSITORY, path)
        text = source.text()
        release = _Release(source, text)
        for table in markdown_tables(text, Path(source.shown)):
            _rows(release, table, tables, imported, skipped)
    comment = (f"Imported by scripts/import_megatron_bridge.py from {REPOSITORY}; figures copied exactly, never edited "
               "by hand:\nre-run the script to refresh (docs/public-record.md).")
    return write_entries(root, TAG, with_variants(imported, tables), skipped, comment, tables, allow_removals)


if __name__ == "__main__":
    sys.exit(run_script(import_megatron_bridge))
