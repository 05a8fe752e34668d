"""What every import of the public record shares: the stored source files, their Markdown tables, and writing the
entries into the catalog all at once.

An importer (scripts/import_*.py) reads a stored copy named in data/public-record/manifest.yaml, turns each table
row into a `PublishedSummary`, and hands them to `write_entries`, which validates every entry like `openrecipes
validate` does, builds the whole new recipes/ in a temporary folder and only then swaps it in. A malformed cell or
an invalid entry is a `UserError` (exit 2) naming the source file, line and cell; nothing in recipes/ changes.
Every cell is read by a strict parser here (`parse_count`, `parse_figure`, `parse_precision`), which every importer
uses.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import yaml
from pydantic import ValidationError

from openrecipes.atomic import copy_folder, publish_folder
from openrecipes.catalog.hardware import (
    ReferenceTables,
    entry_peak,
    load_reference_tables,
    variant_id,
    variant_of_system,
)
from openrecipes.catalog.model import MAX_DEGREE, PUBLISHED_PRECISIONS, PublishedSummary, SummaryGpu
from openrecipes.catalog.paths import bundled_root
from openrecipes.catalog.published import ENTRY_PREFIX, check_published
from openrecipes.catalog.yamlio import read_yaml
from openrecipes.errors import EXIT_BAD_INPUT, UserError
from openrecipes.record.sources import SEPARATOR, cells
from openrecipes.textfile import MIB, read_text

MANIFEST = Path("data/public-record/manifest.yaml")
MAX_SOURCE_BYTES = 4 * MIB  # the largest stored table today is 44 KB


# Short spellings in file names only (the entry itself names the precision in full).
_PRECISION_IN_NAMES = {"fp8-current-scaling": "fp8cs", "fp8-delayed-scaling": "fp8ds", "fp8-blockwise": "fp8block",
                       "fp8-tensorwise": "fp8tw", "fp8-rowwise": "fp8rw"}


def entry_name(source_tag: str, version: str, task: str, precision: str, gpus: int, degrees: dict[str, int | None],
               extras: list[str]) -> str:
    """An entry's file name: source, release, task (pre-training unsaid), precision, GPUs, the parallel degrees
    above 1 (`tp8pp4ep64`) and what else tells two rows of one table apart; short enough to read on an 80-column
    terminal, the entry's `published` block holding the layout in full."""
    parts = [f"{ENTRY_PREFIX}{source_tag}", version, *([] if task == "pretrain" else [task]),
             _PRECISION_IN_NAMES.get(precision, precision), f"{gpus}gpu",
             "".join(f"{name}{degree}" for name, degree in degrees.items() if degree and degree > 1) or "dp1",
             *extras]
    return "-".join(parts)


@dataclass(frozen=True)
class SourceFile:
    """One stored copy of a public file, as the manifest names it."""

    repository: str
    path: str
    commit: str
    sha256: str
    local: Path  # the stored copy on disk

    def text(self) -> str:
        """The stored copy, which must be the file the manifest names (its sha256) and UTF-8 text."""
        text = read_text(self.local, MAX_SOURCE_BYTES, "stored source copy")
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()  # a valid UTF-8 file re-encodes to its own bytes
        if digest != self.sha256:
            raise UserError(f"{self.shown}: sha256 {digest[:12]}... differs from the manifest's {self.sha256[:12]}...; "
                            f"a refreshed copy needs its commit and sha256 updated in {MANIFEST}")
        return text

    @property
    def shown(self) -> str:
        """The stored copy's path as messages name it: relative to the catalog root."""
        return f"{MANIFEST.parent}/{self.repository}/{self.path}"

    def cite(self, section: str, line: int) -> str:
        return f"{self.repository} {self.path} (commit {self.commit}), line {line}, in: {section}"


def source_file(root: Path, repository: str, path: str) -> SourceFile:
    """The manifest's entry for one file; a missing entry or a missing copy is a UserError."""
    manifest = root / MANIFEST
    doc = read_yaml(manifest)
    rows = doc.data.get("sources") if isinstance(doc.data, dict) else None
    for i, row in enumerate(rows or []):
        if isinstance(row, dict) and row.get("repository") == repository and row.get("path") == path:
            try:
                commit, sha = str(row["commit"]), str(row["sha256"])
            except KeyError as missing:
                raise UserError(f"{manifest}:{doc.line_of(f'sources.{i}')}: sources.{i}: {missing} is missing; "
                                "add it") from None
            local = manifest.parent / repository / path
            if not local.is_file():
                raise UserError(f"{local}: the stored copy named in {manifest} is missing; store the file there")
            return SourceFile(repository, path, commit, sha, local)
    raise UserError(f"{manifest}: no source {repository} {path}; add it with its commit and sha256")


@dataclass(frozen=True)
class TableRow:
    line: int  # 1-based line in the source file
    text: str  # the row exactly as written
    cells: tuple[str, ...]


@dataclass
class Table:
    """A Markdown pipe table with the headings above it and the paragraph just before it (its caption)."""

    line: int
    headings: tuple[str, ...]
    caption: str
    header: tuple[str, ...]
    rows: list[TableRow] = field(default_factory=list)

    def column(self, row: TableRow, name: str) -> str | None:
        return row.cells[self.header.index(name)] if name in self.header else None


def markdown_tables(text: str, where: Path) -> list[Table]:
    """Every pipe table of a Markdown file; a row whose cell count differs from its header is a UserError naming
    the file and line."""
    tables: list[Table] = []
    headings: list[tuple[int, str]] = []
    paragraph, caption = "", ""  # the paragraph being read, and the last one a blank line ended
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if heading := re.match(r"^(#{1,6})\s+(.*)$", line):
            level = len(heading.group(1))
            headings = [h for h in headings if h[0] < level] + [(level, heading.group(2).strip())]
            paragraph = caption = ""
        elif line.lstrip().startswith("|") and i + 1 < len(lines) and SEPARATOR.fullmatch(lines[i + 1]):
            table = Table(i + 1, tuple(h for _, h in headings), (paragraph or caption).strip(), cells(line))
            i += 2
            while i < len(lines) and lines[i].lstrip().startswith("|"):
                row = cells(lines[i])
                if len(row) != len(table.header):
                    raise UserError(f"{where}:{i + 1}: table row has {len(row)} cells, its header "
                                    f"{len(table.header)}; fix the row or the header")
                table.rows.append(TableRow(i + 1, lines[i].rstrip(), row))
                i += 1
            tables.append(table)
            paragraph = caption = ""
            continue
        elif line.strip():
            paragraph = line if not paragraph else paragraph + " " + line
        elif paragraph:
            paragraph, caption = "", paragraph
        i += 1
    return tables


_FOOTNOTE_MARK = re.compile(r"\[\^[^\]]*\]")
_COUNT = re.compile(r"[0-9]{1,3}(?:,[0-9]{3})*|[0-9]+")
_FIGURE = re.compile(r"[0-9]{1,3}(?:,[0-9]{3})*(?:\.[0-9]+)?|[0-9]+(?:\.[0-9]+)?")
MAX_FIGURE_DIGITS = 16  # the schema's bounds: counts at most 2^53, figures at most 10^15


def _shown_cell(cell: str) -> str:
    """A cell as a message quotes it: escaped, and cut to 40 characters."""
    text = ascii(cell)[1:-1]
    return text if len(text) <= 40 else text[:37] + "..."


def parse_count(cell: str, where: str, least: int = 1, most: int = MAX_DEGREE) -> int:
    """A whole number as a table writes it ('1,024', '8[^a]': a footnote marker after it is dropped), from `least`
    to `most` (GPUs and parallel degrees: 2^20). Anything else ('256 (512)', '8/../x', '1.5', forty digits) is a
    UserError naming `where` (the file, line and column) and the cell."""
    text = _FOOTNOTE_MARK.sub("", cell).strip()
    if not _COUNT.fullmatch(text) or len(text) > MAX_FIGURE_DIGITS or not least <= int(text.replace(",", "")) <= most:
        raise UserError(f"{where}: '{_shown_cell(cell)}' is not a whole number from {least} to {most:,}; fix the cell")
    return int(text.replace(",", ""))


def parse_optional_count(cell: str, where: str, least: int = 1, most: int = MAX_DEGREE) -> int | None:
    """parse_count, or None for a cell that reads n/a."""
    return None if cell.strip().lower() == "n/a" else parse_count(cell, where, least, most)


def parse_figure(cell: str, where: str) -> int | float:
    """A published figure as written ('6,667' -> 6667, '597.3' -> 597.3; a footnote marker after it is dropped):
    positive, at most 10^15 (the schema's bound on a figure); anything else is a UserError naming `where` and the
    cell."""
    text = _FOOTNOTE_MARK.sub("", cell).strip()
    plain = text.replace(",", "")
    if not _FIGURE.fullmatch(text) or len(plain.partition(".")[0]) > MAX_FIGURE_DIGITS:
        raise UserError(f"{where}: '{_shown_cell(cell)}' is not a number (digits, at most {MAX_FIGURE_DIGITS} "
                        "before the point); fix the cell")
    value = float(plain) if "." in plain else int(plain)
    if not 0 < value <= 1e15:
        raise UserError(f"{where}: '{_shown_cell(cell)}' is not a figure above 0 and at most 10^15; fix the cell")
    return value


def parse_precision(cell: str, gpu: str, where: str, spellings: Mapping[str, str],
                    tables: ReferenceTables | None = None) -> str:
    """The precision a source's `cell` names, by its `spellings` (as written -> as the record names it), which the
    GPU type `gpu` must have tensor cores for (hardware/gpus.yaml: NVFP4 on an H100 is refused). Unknown spellings,
    unknown GPUs and precisions the part lacks are UserErrors naming `where` and the cell."""
    tables = tables or load_reference_tables()
    precision = spellings.get(cell.strip())
    if precision is None or precision not in PUBLISHED_PRECISIONS:
        raise UserError(f"{where}: unknown precision '{_shown_cell(cell)}'; known: {', '.join(spellings)}")
    default = tables.gpus.get(gpu)  # the type's default part: every variant of a type has its tensor-core formats
    peak = None if default is None else entry_peak(
        SummaryGpu(type=gpu, variant=variant_id(default, tables), count=1), precision, tables)
    if peak is None:
        raise UserError(f"{where}: unknown GPU type '{_shown_cell(gpu)}'; known: {', '.join(tables.gpus)} "
                        "(hardware/gpus.yaml)")
    if peak.flops is None:
        raise UserError(f"{where}: precision '{_shown_cell(cell)}' ({precision}) on {gpu}: the GPU has no tensor cores "
                        f"for it (hardware/gpus.yaml gives {gpu} no {peak.column}); fix the cell or the system")
    return precision


@dataclass(frozen=True)
class Skipped:
    """A source row that became no entry, and why (reported by the import, listed in docs/public-record.md)."""

    model: str
    row: str  # file:line
    why: str


@dataclass(frozen=True)
class Imported:
    path: Path  # relative to the catalog root: recipes/<model>/<gpu>/record-<source>-....yaml
    data: dict[str, Any]  # the entry's fields, validated by write_entries
    source_line: str  # file:line of the row, for error messages


@dataclass
class ImportResult:
    written: list[Path] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    removed: list[Path] = field(default_factory=list)  # this source's entries its stored copies no longer give


def _existing_references(root: Path, prefix: str) -> dict[tuple[str, str, str], Path]:
    """(repository, table, row) of the published entries already in the catalog that this import does not own."""
    seen: dict[tuple[str, str, str], Path] = {}
    for path in sorted((root / "recipes").rglob("*.yaml")):
        if path.name.startswith(prefix):
            continue
        data = read_yaml(path).data
        published = data.get("published") if isinstance(data, dict) else None
        reference = published.get("reference") if isinstance(published, dict) else None
        if isinstance(reference, dict):
            key = (str(reference.get("repository")), str(reference.get("table")), str(reference.get("row")))
            seen[key] = path.relative_to(root)
    return seen


def with_variants(imported: list[Imported], tables: ReferenceTables) -> list[Imported]:
    """Each entry's gpu block with the variant its source's system name stands for (hardware/gpus.yaml
    published_as), written right after the type."""
    for item in imported:
        gpu = item.data["gpu"]
        variant = variant_of_system(item.data["published"]["system_as_published"], tables)
        item.data["gpu"] = {"type": gpu["type"], "variant": variant, **{k: v for k, v in gpu.items() if k != "type"}}
    return imported


def write_entries(root: Path, source_tag: str, imported: list[Imported], skipped: list[Skipped],
                  comment: str, tables: ReferenceTables | None = None, allow_removals: bool = False) -> ImportResult:
    """Validate every entry, then replace this source's files under root/recipes with them in one move.

    Rows the catalog already holds under another file (same repository, table and row) are skipped and reported.
    An entry of this source that the stored copies no longer give is removed only with `allow_removals`: a source
    that lost rows (a truncated or damaged copy) is otherwise a UserError listing them, and nothing is written.
    """
    root = Path(root).resolve()
    tables = tables or load_reference_tables(root)
    prefix = f"{ENTRY_PREFIX}{source_tag}-"
    existing = _existing_references(root, prefix)
    result = ImportResult(skipped=list(dict.fromkeys(skipped)))  # a row of two runs is reported once
    chosen: dict[Path, Imported] = {}
    for item in imported:
        entry = _validate(item, tables)
        assert entry.published is not None  # _validate refuses an entry without its published block
        reference = entry.published.reference
        key = (reference.repository, reference.table, reference.row)
        if key in existing:
            result.skipped.append(Skipped(entry.model, item.source_line, f"already in the catalog as {existing[key]}"))
            continue
        if item.path in chosen:
            raise UserError(f"{item.source_line}: the same entry name as {chosen[item.path].source_line} "
                            f"({item.path}); the import names entries by model, GPU and layout")
        chosen[item.path] = item
    (root / "recipes").mkdir(exist_ok=True)  # a new catalog: an empty recipes/ to swap with
    if (root / "recipes").is_symlink():
        raise UserError(f"{root / 'recipes'}: is a symbolic link; an import replaces recipes/ as a whole, so give the "
                        "catalog whose recipes/ is a folder")
    old = set(p.relative_to(root) for p in (root / "recipes").rglob(f"{prefix}*.yaml"))
    result.removed = sorted(old - set(chosen))
    if result.removed and not allow_removals:
        raise UserError(f"the stored copies no longer give {len(result.removed)} entries of this source in the "
                        f"catalog: {', '.join(map(str, result.removed))}; restore the stored copies, or pass "
                        "--allow-removals to remove these entries")
    header = "".join(f"# {line}\n" for line in comment.splitlines())
    # The whole of recipes/ is built beside the catalog (a copy, this source's files replaced by the new ones), then
    # swapped in by one exchange of the two folders: a reader, or an import killed half-way, sees the catalog as it
    # was or as the import leaves it, never a part of each.
    with tempfile.TemporaryDirectory(dir=root, prefix=".import-") as scratch:
        staged = Path(scratch) / "recipes"
        copy_folder(root / "recipes", staged)
        for stale in result.removed:
            (staged / stale.relative_to("recipes")).unlink()
        for path, item in sorted(chosen.items()):
            target = staged / path.relative_to("recipes")
            target.parent.mkdir(parents=True, exist_ok=True)
            if target.is_symlink():  # an entry of this source's that someone made a link: the link goes, not its target
                target.unlink()
            # The entry's fields as the importer read them (6667 stays 6667, not the model's float 6667.0).
            target.write_text(header + yaml.safe_dump(item.data, sort_keys=False, width=116, allow_unicode=True),
                              encoding="utf-8")
            result.written.append(path)
        publish_folder(staged, root / "recipes")
    return result


def _validate(item: Imported, tables: ReferenceTables) -> PublishedSummary:
    """The entry typed and checked like `openrecipes validate` checks it; the first problem is a UserError naming
    the source row."""
    try:
        entry = PublishedSummary.model_validate(item.data)
    except ValidationError as error:
        first = error.errors()[0]
        raise UserError(f"{item.source_line}: {'.'.join(map(str, first['loc']))}: {first['msg']}") from None
    if entry.published is None:
        raise UserError(f"{item.source_line}: published: an imported entry needs its published block")
    errors, _ = check_published(entry, tables)
    if errors:
        raise UserError(f"{item.source_line}: {errors[0].field}: {errors[0].message}")
    return entry


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # a usage mistake is bad input: one line, no usage box
        raise UserError(f"{message} (see --help)")


def run_script(importer: Callable[[Path, bool], ImportResult], argv: list[str] | None = None) -> int:
    """The command line every importer shares: `[--root CATALOG] [--allow-removals]`; prints what was written,
    every skipped row and every removed entry; bad input is one line on stderr and exit 2."""
    parser = _Parser(description=importer.__doc__)
    parser.add_argument("--root", type=Path, default=bundled_root(),
                        help="the catalog folder holding recipes/, models/, hardware/ and data/public-record/")
    parser.add_argument("--allow-removals", action="store_true",
                        help="remove this source's entries that its stored copies no longer give (refused otherwise)")
    try:
        args = parser.parse_args(argv)
        result = importer(args.root.resolve(), args.allow_removals)
    except UserError as error:
        print(f"error: {' '.join(str(error).splitlines())}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as error:  # a folder or file the user named cannot be read or written
        print(f"error: {error.filename or ''}: {error.strerror or error}; check the path", file=sys.stderr)
        return EXIT_BAD_INPUT
    for skipped in result.skipped:
        print(f"skipped {skipped.row}: {skipped.model}: {skipped.why}")
    for removed in result.removed:
        print(f"removed {removed}: its source no longer gives it")
    print(f"wrote {len(result.written)} entries, skipped {len(result.skipped)} rows"
          + (f", removed {len(result.removed)} entries" if result.removed else ""))
    return 0
