"""The probe file: what `openrecipes probe` measured on one part, raw (each shape and every repeat's seconds), one
entry a line; read back with every bad value named by its file, line and entry. The tables derived from the raw
timings are never stored: tables.py derives them, for the planner and for `audit` alike.

A probe is of the part it ran on, a variant id of hardware/gpus.yaml (the driver's device name read through the
part's `reported_as`, or `--part`); a probe run on the CPU device is of the part `cpu`: a trial of the command,
never filed in a catalog.
"""

from __future__ import annotations

import datetime
import json
import re
from bisect import bisect_right
from collections.abc import Callable, Iterator
from itertools import product
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from openrecipes.atomic import starts_with, write_output
from openrecipes.catalog.hardware import ReferenceTables
from openrecipes.errors import UserError
from openrecipes.textfile import MIB, json_depth, read_text, shown

CPU = "cpu"
MAX_PROBE_BYTES = 8 * MIB  # a full probe is about 60 KB
MAX_DEPTH = 4  # the file, a section, an entry, its seconds
OURS = starts_with('{\n  "openrecipes_probe"')  # the first bytes of every probe file: `--out` replaces only these
DOC = "docs/probe.md"
_FIX_TIMING = "every timing is a positive, finite number of seconds; measure again with `openrecipes probe`"

Seconds = Annotated[float, Field(gt=0, le=3600, allow_inf_nan=False)]
Repeats = Annotated[list[Seconds], Field(min_length=1, max_length=10_000)]
Size = Annotated[int, Field(ge=1, le=2**50)]
GemmDtype = Literal["bf16", "fp8"]  # the precisions of catalog.hardware's peak columns
CollectiveKind = Literal["all_reduce", "all_gather", "reduce_scatter", "all_to_all"]


class _Raw(BaseModel):
    # JSON's own types only (a timing written "0.1" is an error), and a misspelt key is an error.
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, frozen=True)


class GemmTiming(_Raw):
    """C[m, n] = A[m, k] . B[n, k]^T, as a linear layer multiplies its input by its weight."""

    m: Size
    n: Size
    k: Size
    dtype: GemmDtype
    seconds: Repeats


class AttentionTiming(_Raw):
    """scaled_dot_product_attention, causal, forward and backward, on q, k and v of [batch, heads, seq, head_dim]."""

    seq: Size
    heads: Size
    head_dim: Size
    batch: Size
    dtype: Literal["bf16"]
    seconds: Repeats


class CopyTiming(_Raw):
    """One device-to-device copy of `size_bytes`: reads and writes that many bytes of HBM."""

    size_bytes: Size
    seconds: Repeats


class CollectiveTiming(_Raw):
    """One collective among `gpus` ranks; `message_bytes` as nccl-tests counts it: the buffer all-reduced, the whole
    gathered output, the whole input scattered, the whole buffer each rank exchanges. Each repeat is the slowest
    rank's time."""

    kind: CollectiveKind
    message_bytes: Size
    gpus: Annotated[int, Field(ge=2, le=2**20)]
    seconds: Repeats


class ProbeFile(_Raw):
    openrecipes_probe: Literal[1]  # the format; first, so that `--out` recognises a probe file it may replace
    part: str
    device: str  # the name the driver reports (or the CPU's)
    driver: str | None
    torch: str
    cuda: str | None
    date: datetime.date = Field(strict=False)  # written as YYYY-MM-DD
    gpus: Size  # the ranks the probe ran on
    quick: bool  # `--quick`'s tiny shapes: a trial of the command, no part's evidence
    gemm: list[GemmTiming] = Field(min_length=1)
    attention: list[AttentionTiming] = Field(min_length=1)
    copies: list[CopyTiming] = Field(min_length=1)
    collectives: list[CollectiveTiming] = Field(default_factory=list)


Timing = GemmTiming | AttentionTiming | CopyTiming | CollectiveTiming
SECTIONS = ("gemm", "attention", "copies", "collectives")


def probe_text(probe: ProbeFile) -> str:
    """The file's text: one header field a line, then each section with one entry a line (so that a bad value's
    line names its entry)."""
    data = probe.model_dump(mode="json")
    lines = [f"  {json.dumps(key)}: {json.dumps(value)}," for key, value in data.items() if key not in SECTIONS]
    for name in SECTIONS:
        entries = ",\n".join(f"    {json.dumps(entry)}" for entry in data[name])
        lines.append(f'  "{name}": [\n{entries}\n  ],' if entries else f'  "{name}": [],')
    return "{\n" + "\n".join(lines)[:-1] + "\n}\n"


def write_probe(path: Path, probe: ProbeFile) -> None:
    """One rename: a reader never sees half a probe, and an interrupted probe leaves none."""
    write_output(path, probe_text(probe), "--out", OURS)


def read_probe(path: Path, reference: ReferenceTables, filed_as: str | None = None) -> ProbeFile:
    """The probe file at `path`, checked whole: JSON, its fields, every timing positive and finite, each section a
    full grid of shapes, its part known (and equal to `filed_as`, the part it is filed under or asked for). Any
    fault is a UserError naming the file, the line and the entry."""
    text = read_text(path, MAX_PROBE_BYTES, "probe file")
    if json_depth(text) > MAX_DEPTH:
        raise UserError(f"{shown(path)}: nested deeper than a probe file; give a file `openrecipes probe` wrote")
    data, line_of = _parse(text, path)
    try:
        probe = ProbeFile.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        value = first["input"]
        got = f" (got {value!r})" if isinstance(value, str | int | float) else ""
        fix = _FIX_TIMING if "seconds" in first["loc"] else f"see {DOC} for the probe file's fields"
        raise UserError(f"{shown(path)}:{line_of(first['loc'])}: {_entry(first['loc'])}: {first['msg']}{got}; "
                        f"{fix}") from None
    _check_part(probe, reference, filed_as, f"{shown(path)}:{_key_line(text, 'part')}")
    for section, shapes in _grids(probe):
        if problem := grid_problem(shapes):
            index, what = problem
            raise UserError(f"{shown(path)}:{line_of((section, index))}: {section}[{index}]: {what}; a probe's "
                            "shapes form a full grid: measure again with `openrecipes probe`")
    return probe


Shapes = list[tuple[int, tuple[int, ...]]]  # (index in its section, shape)


def _grids(probe: ProbeFile) -> Iterator[tuple[str, Shapes]]:
    """Each group of entries whose shapes must form a full grid, since the tables interpolate over it."""
    for dtype in sorted({g.dtype for g in probe.gemm}):
        yield "gemm", [(i, (g.m, g.n, g.k)) for i, g in enumerate(probe.gemm) if g.dtype == dtype]
    yield "attention", [(i, (a.seq, a.head_dim)) for i, a in enumerate(probe.attention)]
    yield "copies", [(i, (c.size_bytes,)) for i, c in enumerate(probe.copies)]
    for group in sorted({(c.kind, c.gpus) for c in probe.collectives}):
        yield "collectives", [(i, (c.message_bytes,)) for i, c in enumerate(probe.collectives)
                              if (c.kind, c.gpus) == group]


def grid_problem(shapes: Shapes) -> tuple[int, str] | None:
    """(index, what) of the first entry that repeats a shape, or of the last one when the shapes are not every
    combination of their coordinates; None when they form a full grid."""
    seen: dict[tuple[int, ...], int] = {}
    for index, shape in shapes:
        if shape in seen:
            return index, f"measures {shape} again (first at entry {seen[shape]})"
        seen[shape] = index
    axes = [sorted({shape[axis] for shape in seen}) for axis in range(len(shapes[0][1]))]
    missing = next((point for point in product(*axes) if point not in seen), None)
    return (shapes[-1][0], f"the grid lacks {missing}") if missing else None


def known_parts(reference: ReferenceTables) -> str:
    return f"known: {', '.join(reference.variants)} (hardware/gpus.yaml; {DOC} says how to add a part)"


def _check_part(probe: ProbeFile, reference: ReferenceTables, filed_as: str | None, where: str) -> None:
    if probe.part not in reference.variants and (filed_as is not None or probe.part != CPU):
        raise UserError(f"{where}: part: unknown part '{probe.part}'; {known_parts(reference)}")
    if filed_as is not None and probe.part != filed_as:
        raise UserError(f"{where}: part: the probe measured '{probe.part}', not '{filed_as}'; file it as "
                        f"hardware/probes/{probe.part}.json, or probe a {filed_as}")


def part_of_device(device: str, asked: str | None, reference: ReferenceTables) -> str:
    """The part a GPU the driver names `device` is: `asked` (a variant id, which must not be another part's
    device), else the part whose `reported_as` lists the name."""
    listed = [key for key, spec in reference.variants.items() if device in spec.reported_as]
    if asked is not None:
        if asked not in reference.variants:
            raise UserError(f"--part: unknown part '{asked}'; {known_parts(reference)}")
        if listed and asked not in listed:
            raise UserError(f"--part: this GPU reports itself as '{device}', the name of {', '.join(listed)}, not "
                            f"of {asked}; give one of those, or leave --part out")
        return asked
    if not listed:
        raise UserError(f"no part of hardware/gpus.yaml is reported as '{device}'; add the name to its part's "
                        f"reported_as, or give --part ({known_parts(reference)})")
    return listed[0]


def _entry(loc: tuple) -> str:
    """A location as written in JSON terms: gemm[3].seconds[1]."""
    return "".join(f"[{step}]" if isinstance(step, int) else f".{step}" for step in loc).lstrip(".") or "the file"


def _key_line(text: str, key: str) -> int:
    found = re.search(rf'"{key}"\s*:', text)
    return text.count("\n", 0, found.start()) + 1 if found else 1


def _parse(text: str, path: Path) -> tuple[Any, Callable[[tuple], int]]:
    """The JSON value and, for a location in it, the line where its innermost object or array starts: Python's
    pure-Python scanner, whose object and array readers can be wrapped to note where each one starts."""
    newlines = [index for index, char in enumerate(text) if char == "\n"]
    starts: dict[int, int] = {}  # id of each object and array -> its line

    def noted(reader: Callable) -> Callable:
        def read(s_and_end: tuple[str, int], *rest: Any) -> tuple[Any, int]:
            value, end = reader(s_and_end, *rest)
            starts[id(value)] = bisect_right(newlines, s_and_end[1] - 1) + 1
            return value, end
        return read

    def once(pairs: list[tuple[str, Any]]) -> dict:
        keys = [key for key, _ in pairs]
        if twice := next((key for key in keys if keys.count(key) > 1), None):
            raise UserError(f"{shown(path)}: '{twice}' is written twice in one object; keep one")
        return dict(pairs)

    decoder = json.JSONDecoder(object_pairs_hook=once)
    decoder.parse_object = noted(json.decoder.JSONObject)  # type: ignore[attr-defined]
    decoder.parse_array = noted(json.decoder.JSONArray)  # type: ignore[attr-defined]
    decoder.scan_once = json.scanner.py_make_scanner(decoder)  # type: ignore[attr-defined]
    try:
        data = decoder.decode(text)
    except json.JSONDecodeError as error:
        raise UserError(f"{shown(path)}:{error.lineno}: not JSON ({error.msg}); give a file `openrecipes probe` "
                        "wrote") from None
    except ValueError as error:  # an integer of thousands of digits
        raise UserError(f"{shown(path)}: {error}; give a file `openrecipes probe` wrote") from None

    def line_of(loc: tuple) -> int:
        line, value = starts.get(id(data), 1), data
        for step in loc:
            try:
                value = value[step]
            except (KeyError, IndexError, TypeError):
                break
            line = starts.get(id(value), line)
        return line

    return data, line_of
