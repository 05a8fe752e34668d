"""NVIDIA's dgxc-benchmarking "Expected Performance" tables: every cell parsed strictly from its stored excerpt, and
the published entry it becomes (scripts/import_dgxc_benchmarking.py writes them; `openrecipes audit` re-derives
each one from the same excerpt with `rederive`).

Two table shapes, one layout per model and precision at growing GPU counts (a weak-scaling sweep):
- up to v25.03: the layout in the table's first cell ("Llama 3.1 70b 24.09 BF16 (TP=4, PP=4, CP=2, VP=5, MBS=1,
  GA=64)"), the GPUs and global batch in each column ("Throughput on 64x H100 GPUs (GBS=128)"); the 405B table
  gives Layers, GBS, PP and VP per column in rows of their own;
- from v25.04: layout tables (| Size | Precision | GPUs | ... | or, under a "**GB200**:" label, | GPUs | SeqLen |
  Layers | ... |) and performance tables whose first cell is the model and precision ("Llama 3.1 8b BF16").

Each performance table gives the step time, the job's tokens/s and MFU. The entry's tokens/s per GPU is the
published tokens/s over the GPUs; it must agree with sequence length x global batch / step time within the rounding
of the step time and of the tokens/s, else the cell is refused. A column of fewer layers than the model's (the
"405b-Proxy" runs on 32 to 192 GPUs) is not that model and is reported, not imported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openrecipes.errors import UserError
from openrecipes.record.importer import Skipped, entry_name
from openrecipes.record.sources import (
    SEPARATOR,
    Decimal,
    Excerpt,
    ParsedLayout,
    cells,
    differences,
    optional_degree,
    parse_count,
    parse_decimal,
    parse_percent,
    pin_problem,
    read_excerpt,
)

SOURCE = "dgxc-benchmarking"
REPOSITORY = "NVIDIA/dgxc-benchmarking"
TAG = "dgxc"
MODELS = {"8b": ("llama-3.1-8b", 32), "70b": ("llama-3.1-70b", 80), "405b": ("llama-3.1-405b", 126)}
PRECISIONS = {"BF16": "bf16", "FP8": "fp8"}  # the tables do not say which FP8 scaling recipe ran
GPU_TYPES = {"H100": ("H100", "H100-SXM5-80GB"), "GB200": ("GB200", "GB200-NVL72-186GB")}
# Every table states the throughput formula as sequence length x global batch / step time with 8,192 tokens
# (e.g. "8192 * 128 / 11.31 = 92712"); the older tables have no sequence-length column.
SEQ_LENGTH = 8192
UNCARDED = {"nemotron": "Nemotron4 15B and 340B", "grok1": "Grok-1 314B", "nemo_megatron": "GPT-3 175B"}
_STEP, _TOKENS, _MFU, _DAYS = ("Training step time (seconds per step)", "Throughput in tokens per second",
                               "Model flops utilization", "Time to train 1T tokens in days")
_PER_COLUMN = ("Layers", "GBS", "PP", "VP")  # the 405B tables' per-column rows
# Cells whose published tokens/s the table's own step time and batch contradict, found by this importer and checked
# by hand against the release's file: (excerpt under data/record-sources/dgxc-benchmarking/, line, GPUs) -> why.
_SWAPPED = ("its tokens/s equal 8192 x 4096 / 14.92 s, the step time of the 1,024-GPU column beside it; which "
            "figure is right cannot be known from the table")
KNOWN_CONTRADICTIONS: dict[tuple[str, int, int], str] = {
    ("v24.11.1/llama3.1/README_70b.md.txt", 54, 2048): _SWAPPED,
    ("v25.01.1/llama3.1/README_70b.md.txt", 54, 2048): _SWAPPED,
}


@dataclass(frozen=True)
class Cell:
    """One column of one performance table: one run of one layout on one GPU count."""

    excerpt: Excerpt
    release: str
    size: str  # 8b, 70b, 405b
    model_as_published: str
    precision_as_published: str
    system: str  # H100, GB200 as the column writes it
    gpus: int
    layout: ParsedLayout
    step_time: Decimal
    tokens_per_s: Decimal
    mfu: Decimal
    header_line: int
    tokens_line: int
    lines: tuple[int, ...]


Body = list[tuple[int, tuple[str, ...]]]


def _tables(excerpt: Excerpt) -> list[tuple[int, Body, str | None]]:
    """(header line, [(line, cells)] of its body, the system label above it) for every table of the excerpt: a
    header line, its separator on the next line, then the table lines that follow without a gap."""
    tables: list[tuple[int, Body, str | None]] = []
    label: str | None = None
    numbers = list(excerpt.lines)
    i = 0
    while i < len(numbers):
        number, text = numbers[i], excerpt.lines[numbers[i]]
        if (found := re.match(r"^\*\*([A-Z0-9]+)\*\*:", text)):
            label = found.group(1)
        elif SEPARATOR.fullmatch(text):
            raise UserError(f"{excerpt.where(number)}: a table separator without its header line above")
        elif i + 1 < len(numbers) and numbers[i + 1] == number + 1 and SEPARATOR.fullmatch(
                excerpt.lines[number + 1]):
            body: Body = []
            i += 2
            while i < len(numbers) and numbers[i] == numbers[i - 1] + 1 and excerpt.lines[numbers[i]].startswith("|"):
                body.append((numbers[i], cells(excerpt.lines[numbers[i]])))
                i += 1
            tables.append((number, body, label))
            continue
        else:
            raise UserError(f"{excerpt.where(number)}: a table line outside a table (no header and separator)")
        i += 1
    return tables


_TITLE_A = re.compile(r"^Llama 3\.1 (8b|70b|405b)(?: 24\.09)? (BF16|FP8) \((.*)\)$")
_COLUMN_A = re.compile(r"^Throughput on ([0-9]+)x (H100) GPUs(?: \(GBS=([0-9]+)\))?$")
_TITLE_B = re.compile(r"^Llama ?3\.1 (8b|70b|405b) (BF16|FP8)$")
_COLUMN_B = re.compile(r"^([0-9]+)x (H100|GB200) GPUs$")


def _rows(body: Body, width: int, where: Excerpt,
          known: tuple[str, ...]) -> dict[str, tuple[int, tuple[str, ...]]]:
    rows: dict[str, tuple[int, tuple[str, ...]]] = {}
    for number, row in body:
        row = row[:width] if len(row) > width and not any(row[width:]) else row
        if len(row) != width:
            raise UserError(f"{where.where(number)}: {len(row)} cells, the header {width}; fix the row")
        if row[0] not in known or row[0] in rows:
            raise UserError(f"{where.where(number)}: unknown or repeated row '{row[0]}'; known: {', '.join(known)}")
        rows[row[0]] = (number, row)
    for needed in (_STEP, _TOKENS, _MFU):
        if needed not in rows:
            raise UserError(f"{where.where(body[0][0] if body else 1)}: the table has no '{needed}' row")
    return rows


def parse(excerpt: Excerpt, skipped: list[Skipped]) -> list[Cell]:
    """Every importable cell of a Llama 3.1 excerpt; proxy columns are reported in `skipped`."""
    if not (found := re.search(r"^data/record-sources/dgxc-benchmarking/(v[0-9.]+)/", excerpt.shown)):
        raise UserError(f"{excerpt.shown}: not under data/record-sources/dgxc-benchmarking/<release tag>/")
    release = found.group(1)
    tables = _tables(excerpt)
    layouts = _layout_tables(excerpt, tables)
    out: list[Cell] = []
    for header_line, body, _ in tables:
        header = cells(excerpt.lines[header_line])
        where = excerpt.where(header_line)
        if (a := _TITLE_A.match(header[0])):
            out += _cells_a(excerpt, release, header_line, header, body, a, skipped)
        elif (b := _TITLE_B.match(header[0])):
            out += _cells_b(excerpt, release, header_line, header, body, b, layouts, skipped)
        elif header[0] not in ("Size", "GPUs", "Data Type", "Model"):  # layouts, peaks, checkpoint sizes
            raise UserError(f"{where}: unknown table '{header[0]}'; the importer knows the Llama 3.1 performance, "
                            "layout and peak tables")
    return out


def _cells_a(excerpt: Excerpt, release: str, header_line: int, header: tuple[str, ...],
             body: Body, title: re.Match[str], skipped: list[Skipped]) -> list[Cell]:
    where = excerpt.where(header_line)
    params: dict[str, int] = {}  # 'TP=4, PP=4, CP=2, VP=5, MBS=1, GA=64' -> {'TP': 4, ...}
    for part in title.group(3).split(","):
        found = re.fullmatch(r"\s*(TP|PP|CP|VP|MBS|GA)=([0-9]+)\s*", part)
        if not found or found.group(1) in params:
            raise UserError(f"{where}: '{part.strip()[:40]}' is not one of TP, PP, CP, VP, MBS, GA = a count; fix "
                            "the table's first cell")
        params[found.group(1)] = parse_count(found.group(2), where, found.group(1))
    for needed in ("TP", "PP", "CP", "MBS"):
        if needed not in params:
            raise UserError(f"{where}: the first cell names no {needed}; fix the table")
    rows = _rows(body, len(header), excerpt, (_STEP, _TOKENS, _MFU, _DAYS, *_PER_COLUMN))
    out: list[Cell] = []
    for column, text in enumerate(header[1:], start=1):
        found = _COLUMN_A.match(text)
        if not found:
            raise UserError(f"{where}: column '{text}' is not 'Throughput on <N>x H100 GPUs (GBS=<n>)'")
        per = {name: rows[name][1][column] for name in _PER_COLUMN if name in rows}
        lines = [header_line, *(rows[name][0] for name in per)]
        layers = parse_count(per["Layers"], excerpt.where(rows["Layers"][0]), "Layers") if "Layers" in per else None
        gpus = parse_count(found.group(1), where, "GPUs")
        if layers is not None and layers != MODELS[title.group(1)][1]:
            skipped.append(Skipped(MODELS[title.group(1)][0], f"{where} column {column}", f"a proxy of {layers} of "
                                   f"the model's {MODELS[title.group(1)][1]} layers on {gpus} GPUs, not the model"))
            continue
        gbs_text = per.get("GBS", found.group(3))
        if gbs_text is None:
            raise UserError(f"{where}: column {column} gives no global batch (GBS); fix the table")
        layout = ParsedLayout(params["TP"], parse_count(per["PP"], where, "PP") if "PP" in per else params["PP"],
                        params["CP"], optional_degree(per["VP"], where, "VP") if per.get("VP") else params.get("VP"),
                        params["MBS"], None if per else params.get("GA"), parse_count(gbs_text, where, "GBS"), layers)
        _keep(_cell(excerpt, release, title, found.group(2), gpus, layout, header_line, rows, column, lines), out,
              skipped)
    return out


def _cell(excerpt: Excerpt, release: str, title: re.Match[str], system: str, gpus: int, layout: ParsedLayout,
          header_line: int, rows: dict[str, tuple[int, tuple[str, ...]]], column: int, lines: list[int]) -> Cell:
    step_line, tokens_line, mfu_line = rows[_STEP][0], rows[_TOKENS][0], rows[_MFU][0]
    return Cell(excerpt, release, title.group(1), title.group(0).split(" (")[0], title.group(2), system, gpus, layout,
                parse_decimal(rows[_STEP][1][column], excerpt.where(step_line), "step time"),
                parse_decimal(rows[_TOKENS][1][column], excerpt.where(tokens_line), "tokens/s"),
                parse_percent(rows[_MFU][1][column], excerpt.where(mfu_line), "MFU"),
                header_line, tokens_line, tuple(sorted({*lines, step_line, tokens_line, mfu_line})))


def _keep(cell: Cell, out: list[Cell], skipped: list[Skipped]) -> None:
    """A cell that agrees with itself is kept; one the source contradicts is refused (a UserError naming the file and
    line) unless KNOWN_CONTRADICTIONS lists it, when it is reported as not imported with the reason."""
    problem = contradiction(cell)
    if problem is None:
        out.append(cell)
        return
    key = (cell.excerpt.shown.removeprefix(f"data/record-sources/{SOURCE}/"), cell.tokens_line, cell.gpus)
    if key not in KNOWN_CONTRADICTIONS:
        raise UserError(f"{cell.excerpt.where(cell.tokens_line)}: {cell.gpus} GPUs: {problem}; the table contradicts "
                        "itself (list the cell in record_dgxc.KNOWN_CONTRADICTIONS with the reason to report it)")
    skipped.append(Skipped(MODELS[cell.size][0], f"{cell.excerpt.where(cell.tokens_line)} ({cell.gpus} GPUs)",
                           f"{problem}: {KNOWN_CONTRADICTIONS[key]}"))


def contradiction(cell: Cell) -> str | None:
    """Why the published tokens/s disagrees with sequence length x global batch / step time beyond the rounding of
    both (the step time's half unit moves the quotient by quotient x half unit / step time); None when it agrees."""
    assert cell.layout.gbs is not None
    derived = SEQ_LENGTH * cell.layout.gbs / cell.step_time.value
    allowed = derived * cell.step_time.half_unit / cell.step_time.value + cell.tokens_per_s.half_unit
    if abs(derived - cell.tokens_per_s.value) <= allowed:
        return None
    return (f"published {cell.tokens_per_s.text} tokens/s, but {SEQ_LENGTH} x GBS {cell.layout.gbs} / step time "
            f"{cell.step_time.text} s = {derived:.0f} (more than the rounding, {allowed:.0f}, apart)")


def _layout_tables(excerpt: Excerpt, tables: list[tuple[int, Body, str | None]]
                   ) -> dict[tuple[str, str, int, str], tuple[int, ParsedLayout]]:
    """(size, precision, GPUs, system) -> (line, layout) from the layout tables of the v25.04+ files."""
    out: dict[tuple[str, str, int, str], tuple[int, ParsedLayout]] = {}
    for header_line, body, label in tables:
        header = cells(excerpt.lines[header_line])
        if header[0] not in ("Size", "GPUs"):
            continue
        for number, row in body:
            where = excerpt.where(number)
            if len(row) != len(header):
                raise UserError(f"{where}: {len(row)} cells, the header {len(header)}; fix the row")
            field = dict(zip(header, row, strict=True))
            layers = parse_count(field["Layers"], where, "Layers")
            size = field["Size"] if "Size" in field else next(
                (s for s, (_, n) in MODELS.items() if n == layers), None)
            if size is None or size.removesuffix("-Proxy") not in MODELS:
                raise UserError(f"{where}: unknown model '{field.get('Size', layers)}'; known: {', '.join(MODELS)}")
            if parse_count(field["SeqLen"], where, "SeqLen") != SEQ_LENGTH:
                raise UserError(f"{where}: sequence length {field['SeqLen']}, the importer knows {SEQ_LENGTH}")
            if field.get("EP", "NA").upper() != "NA" or field.get("FSDP", "0") != "0":
                raise UserError(f"{where}: EP or FSDP set on a dense Llama layout; fix the row")
            layout = ParsedLayout(parse_count(field["TP"], where, "TP"), parse_count(field["PP"], where, "PP"),
                            parse_count(field["CP"], where, "CP"), optional_degree(field["VP"], where, "VP"),
                            parse_count(field["MBS"], where, "MBS"), parse_count(field["GA"], where, "GA"),
                            parse_count(field["GBS"], where, "GBS"), layers)
            system = label or "H100"  # the v25.04 file runs H100 only and labels no table
            for precision in field.get("Precision", "BF16/FP8").split("/"):
                key = (size.removesuffix("-Proxy"), precision, parse_count(field["GPUs"], where, "GPUs"), system)
                if key in out:
                    raise UserError(f"{where}: a second layout for {key}; fix the table")
                out[key] = (number, layout)
    return out


def _cells_b(excerpt: Excerpt, release: str, header_line: int, header: tuple[str, ...],
             body: Body, title: re.Match[str],
             layouts: dict[tuple[str, str, int, str], tuple[int, ParsedLayout]], skipped: list[Skipped]) -> list[Cell]:
    where = excerpt.where(header_line)
    rows = _rows(body, len(header), excerpt, (_STEP, _TOKENS, _MFU, _DAYS))
    out: list[Cell] = []
    for column, text in enumerate(header[1:], start=1):
        found = _COLUMN_B.match(text)
        if not found:
            raise UserError(f"{where}: column '{text}' is not '<N>x H100 GPUs' or '<N>x GB200 GPUs'")
        gpus, system = parse_count(found.group(1), where, "GPUs"), found.group(2)
        key = (title.group(1), title.group(2), gpus, system)
        if key not in layouts:
            raise UserError(f"{where}: column '{text}': no layout table row for {title.group(0)} on {gpus} {system}; "
                            "the importer does not guess a layout")
        line, layout = layouts[key]
        full = MODELS[title.group(1)][1]
        if layout.layers is not None and layout.layers != full:
            skipped.append(Skipped(MODELS[title.group(1)][0], f"{where} column {column}", f"a proxy of "
                                   f"{layout.layers} of the model's {full} layers on {gpus} GPUs, not the model"))
            continue
        _keep(_cell(excerpt, release, title, system, gpus, layout, header_line, rows, column, [line]), out, skipped)
    return out


def sweep_id(cell: Cell) -> str:
    lay = cell.layout
    return (f"dgxc-{cell.release}-{MODELS[cell.size][0]}-{PRECISIONS[cell.precision_as_published]}-{cell.system}-"
            f"tp{lay.tp}pp{lay.pp}cp{lay.cp}vp{lay.vp or 1}")


def entry(cell: Cell) -> tuple[Path, dict[str, Any]]:
    """The published entry of one cell: its path under the catalog root and its fields."""
    model, _ = MODELS[cell.size]
    gpu_type, variant = GPU_TYPES[cell.system]
    precision = PRECISIONS[cell.precision_as_published]
    lay = cell.layout
    assert lay.gbs is not None
    per_gpu = round(cell.tokens_per_s.value / cell.gpus, 2)
    text = cell.excerpt.lines
    name = entry_name(TAG, cell.release, "pretrain", precision, cell.gpus,
                      {"tp": lay.tp, "pp": lay.pp, "cp": cell.layout.cp, "vp": lay.vp}, [f"gbs{lay.gbs}"])
    data: dict[str, Any] = {
        "schema_version": 1, "kind": "published_summary", "model": model,
        "gpu": {"type": gpu_type, "variant": variant, "count": cell.gpus},
        "result": {"tokens_per_s_per_gpu": per_gpu, "usd_per_million_tokens": None},
        "source": f"{REPOSITORY} {cell.excerpt.path} (commit {cell.excerpt.commit}, release {cell.release}), line "
                  f"{cell.tokens_line}, in: {text[cell.header_line].strip()}",
        "note": (f"Copied from NVIDIA's dgxc-benchmarking Expected Performance table (release {cell.release}): the "
                 f"job's {cell.tokens_per_s.text} tokens/s over its {cell.gpus} GPUs; the step time, tokens/s and "
                 "MFU are as published. One layout at growing GPU counts (a weak-scaling sweep). No log is "
                 "published, so the entry is never ranked with measured recipes. FP8 is as published: the table "
                 "does not name the scaling recipe."),
        "published": {
            "engine": "nemo", "engine_version": f"NeMo as in dgxc-benchmarking {cell.release}"
            + (" (NeMo 24.09)" if "24.09" in text[cell.header_line] else ""),
            "task": "pretrain", "model_as_published": cell.model_as_published, "system_as_published": cell.system,
            "precision": precision, "precision_as_published": cell.precision_as_published,
            "seq_length": SEQ_LENGTH, "global_batch": lay.gbs, "micro_batch": lay.mbs, "local_batch": None,
            "gradient_accumulation": lay.ga,
            "layout": lay.degrees(),
            "recompute": None, "techniques": [], "model_tflops_per_gpu": None,
            "reference": {"repository": REPOSITORY, "path": cell.excerpt.path, "commit": cell.excerpt.commit,
                          "table": text[cell.header_line].strip(), "row": text[cell.tokens_line].strip(),
                          "line": cell.tokens_line},
            "derivation": {
                "excerpt": cell.excerpt.shown, "excerpt_sha256": cell.excerpt.sha256, "method": "table-throughput",
                "formula": (f"published tokens/s {cell.tokens_per_s.text} / {cell.gpus} GPUs, rounded to 0.01; "
                            f"checked against {SEQ_LENGTH} x GBS {lay.gbs} / step time {cell.step_time.text} s"),
                "lines": list(cell.lines), "step_time_s": cell.step_time.number,
                "published_tokens_per_s": cell.tokens_per_s.number, "published_mfu_percent": cell.mfu.number,
                "sweep": sweep_id(cell), "submitter": "NVIDIA",
            },
        },
    }
    return Path("recipes") / model / gpu_type.lower() / f"{name}.yaml", data


def uncarded(excerpt: Excerpt) -> Skipped | None:
    """A file of a model the catalog has no card for, reported once with its table count."""
    family = excerpt.path.split("/")[0]
    if family not in UNCARDED:
        return None
    count = sum(1 for text in excerpt.lines.values() if re.match(r"^\|[^|]*(BF16|FP8)", text))
    return Skipped(UNCARDED[family], excerpt.shown, f"{count} performance table(s): no model card in models/ and "
                   "no published config.json in the stored sources to make one from")


def rederive(data: dict[str, Any], stem: str, root: Path) -> list[str]:
    """What differs between a stored dgxc entry and the entry its excerpt gives today (empty: it holds)."""
    derivation = data["published"]["derivation"]
    if (problem := pin_problem(root, derivation)) is not None:
        return [problem]
    excerpt = read_excerpt(root, derivation["excerpt"])
    for cell in parse(excerpt, []):
        path, derived = entry(cell)
        if path.stem == stem:
            return differences(data, derived)
    return [f"no cell of {excerpt.shown} gives this entry"]
