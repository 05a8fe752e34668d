"""Stored excerpts of public sources, and the strict cell parsers the excerpt-based importers share.

An excerpt (data/record-sources/<source>/...) keeps only the lines of a public file an importer reads, each as
"<line>: <text>" exactly as the file writes it, under a header naming the repository, path and commit
(scripts/store_record_excerpts.py writes them). Entries made from an excerpt name it with its sha256, so `openrecipes
audit` re-derives each figure from the same lines without the network (catalog/record_dgxc.py,
catalog/record_mlperf.py).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openrecipes.catalog.model import MAX_DEGREE, PublishedLayout
from openrecipes.errors import UserError
from openrecipes.textfile import MIB, read_text

EXCERPTS = Path("data/record-sources")
MAX_EXCERPT_BYTES = 1 * MIB
_HEADER = re.compile(r"^# (origin|commit|file sha256|kept): (.*)$")
_LINE = re.compile(r"^([1-9][0-9]{0,8}): (.*)$")  # a line of a public file: under a billion
SEPARATOR = re.compile(r"\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*")  # a Markdown table's header separator


@dataclass(frozen=True)
class Excerpt:
    """The kept lines of one public file at one commit."""

    shown: str  # the excerpt's path relative to the catalog root, as messages and entries name it
    repository: str
    path: str
    commit: str
    sha256: str  # the excerpt's own sha256 (the entry pins it)
    lines: dict[int, str]  # line number in the public file -> its text
    file_sha256: str  # the whole public file's, as the header names it

    def where(self, line: int) -> str:
        return f"{self.shown}:{line}"


def read_excerpt(root: Path, relative: str) -> Excerpt:
    """An excerpt under root; a missing header field, a line out of order or a repeated line is a UserError."""
    local = root / relative
    if not local.is_file():
        raise UserError(f"{relative}: the stored excerpt is missing; store it with scripts/store_record_excerpts.py")
    text = read_text(local, MAX_EXCERPT_BYTES, "stored excerpt")
    header: dict[str, str] = {}
    lines: dict[int, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if (found := _HEADER.match(line)) and not lines:
            header[found.group(1)] = found.group(2)
        elif (kept := _LINE.match(line)) and int(kept.group(1)) > max(lines, default=0):
            lines[int(kept.group(1))] = kept.group(2)
        else:
            raise UserError(f"{relative}:{number}: not '<line>: <text>' after the last kept line; re-store the "
                            "excerpt with scripts/store_record_excerpts.py")
    origin = header.get("origin", "").split(" ", 1)
    if len(origin) != 2 or not re.fullmatch(r"[0-9a-f]{40}", header.get("commit", "")):
        raise UserError(f"{relative}:1: the header needs '# origin: <owner/repo> <path>' and '# commit: <40 hex>'; "
                        "re-store the excerpt")
    return Excerpt(relative, origin[0], origin[1], header["commit"], hashlib.sha256(text.encode()).hexdigest(), lines,
                   header.get("file sha256", ""))


def excerpt_files(root: Path, source: str) -> list[str]:
    """Every excerpt of one source, relative to root, in a stable order."""
    folder = root / EXCERPTS / source
    return sorted(str(p.relative_to(root)) for p in folder.rglob("*.txt")) if folder.is_dir() else []


def cells(text: str) -> tuple[str, ...]:
    """The cells of a Markdown table line, stripped; a trailing pipe is optional (the dgxc tables omit some)."""
    return tuple(cell.strip() for cell in text.strip().removeprefix("|").removesuffix("|").split("|"))


@dataclass(frozen=True)
class Decimal:
    """A published decimal exactly as written: its value and the half unit of its last written digit."""

    text: str
    value: float

    @property
    def number(self) -> int | float:
        """The value as written: 71235 stays an integer, 14.72 a decimal."""
        return self.value if "." in self.text else int(self.text)

    @property
    def half_unit(self) -> float:
        return 0.5 * 10.0 ** -len(self.text.partition(".")[2])  # the decimals written


def _shown(cell: str) -> str:
    """A cell as a message quotes it: cut to 40 characters."""
    return cell if len(cell) <= 40 else cell[:37] + "..."


def parse_decimal(cell: str, where: str, what: str) -> Decimal:
    """'14.72' or '71235' (a thousands comma allowed), at most 16 digits before the point and 16 after (the schema's
    figures are at most 10^15); anything else, '8.7  5' and forty digits included, is a UserError."""
    text = cell.replace(",", "") if re.fullmatch(r"[0-9]{1,3}(,[0-9]{3})+(\.[0-9]+)?", cell) else cell
    if not re.fullmatch(r"[0-9]{1,16}(\.[0-9]{1,16})?", text) or float(text) <= 0:
        raise UserError(f"{where}: {what} '{_shown(cell)}' is not a positive number of at most 16 digits before and "
                        "after the point; fix the cell")
    return Decimal(text, float(text))


def parse_count(cell: str, where: str, what: str) -> int:
    """A whole count from 1 to 2^20 ('8', '2048': GPUs, parallel degrees, batches, layers, sequence lengths);
    anything else, forty digits included, is a UserError."""
    if not re.fullmatch(r"[1-9][0-9]{0,6}", cell) or int(cell) > MAX_DEGREE:
        raise UserError(f"{where}: {what} '{_shown(cell)}' is not a whole number from 1 to {MAX_DEGREE:,}; fix the "
                        "cell")
    return int(cell)


def parse_percent(cell: str, where: str, what: str) -> Decimal:
    """'54.10%' -> 54.10 (the percent sign required)."""
    if not cell.endswith("%"):
        raise UserError(f"{where}: {what} '{cell}' is not a percentage; fix the cell")
    return parse_decimal(cell[:-1].strip(), where, what)


@dataclass(frozen=True)
class ParsedLayout:
    """A published Megatron layout as an excerpt-based importer reads it: the degrees its entry's `published.layout`
    holds (`degrees`) and, beside them, the batch, depth and precision the source gives with them."""

    tp: int
    pp: int
    cp: int
    vp: int | None
    mbs: int
    ga: int | None = None
    gbs: int | None = None
    layers: int | None = None  # dgxc, where the source gives it: a column of fewer is a proxy, not the model
    precision: str | None = None  # MLPerf: from the config script (bf16, fp8, nvfp4)
    precision_as_published: str | None = None

    def degrees(self) -> dict[str, Any]:
        """The entry's `published.layout`: these sources give no EP, ETP or FSDP column."""
        return PublishedLayout(tp=self.tp, pp=self.pp, vp=self.vp, cp=self.cp, ep=None, etp=None,
                               fsdp=None).model_dump()


def optional_degree(cell: str, where: str, what: str) -> int | None:
    """A parallel degree, or None where the source writes NA or n/a."""
    return None if cell.lower() in ("na", "n/a") else parse_count(cell, where, what)


def pin_problem(root: Path, derivation: dict[str, Any]) -> str | None:
    """Why an entry's pinned excerpt is not the stored one (its sha256 differs), or None."""
    excerpt = read_excerpt(root, derivation["excerpt"])
    if excerpt.sha256 == derivation["excerpt_sha256"]:
        return None
    return (f"the excerpt {excerpt.shown} has sha256 {excerpt.sha256[:12]}..., the entry pins "
            f"{derivation['excerpt_sha256'][:12]}...")


def differences(stored: dict[str, Any], derived: dict[str, Any]) -> list[str]:
    """Each top-level field the stored entry writes otherwise than its excerpt gives it."""
    return [f"{key}: stored {stored.get(key)!r} != derived {value!r}" for key, value in derived.items()
            if value != stored.get(key)]
