"""`measure --write`: replace the measured fields of a recipe's `result:` block in place, atomically.

Only those lines change: the rest of the YAML text (comments, key order, quoting, line breaks) is kept byte for
byte. The new text is validated first, read under the recipe's own path against its catalog's tables; only a valid
text replaces the recipe, through openrecipes.atomic.write_atomic, so it is never seen half-written or invalid.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from openrecipes.atomic import check_regular, write_atomic
from openrecipes.catalog.yamlio import parse_yaml
from openrecipes.errors import UserError
from openrecipes.measure.result import PUBLISHED_DECIMALS

if TYPE_CHECKING:
    from openrecipes.catalog.hardware import ReferenceTables
    from openrecipes.measure.result import Measured

# The result fields a measurement sets; the others (active_params, runs, notes) are the author's.
WRITTEN_FIELDS = (
    "tokens_per_s_per_gpu",
    "usd_per_million_tokens",
    "step_time_cv_percent",
    "mfu",
    "measured",
    "steps_per_run",
    "window",
    "window_tokens",
    "gpu_hours",
)


def _yaml_scalar(name: str, value: object) -> str:
    if isinstance(value, float):
        # Fixed-point at the published precision, trailing zeros dropped as the seeds write them (146.8, 0.0158):
        # never '1e-05', which YAML 1.1 would read back as a string.
        text = f"{value:.{PUBLISHED_DECIMALS.get(name, 6)}f}".rstrip("0")
        return text + "0" if text.endswith(".") else text
    return str(value)


def _block_bounds(lines: list[str], key: str) -> tuple[int, int]:
    """Index of the `key:` line at column 0 and the index just past its indented block."""
    start = next((i for i, line in enumerate(lines) if re.match(rf"^{key}:\s*(#.*)?$", line)), None)
    if start is None:
        raise UserError(f"no top-level '{key}:' block in the recipe; add one (see schema/recipe.schema.yaml)")
    end = start + 1
    while end < len(lines) and (not lines[end].strip() or lines[end][0] in " \t#"):
        end += 1
    while end > start + 1 and not lines[end - 1].strip():
        end -= 1
    return start, end


def _field_span(lines: list[str], start: int, end: int, indent: str, name: str) -> tuple[int, int] | None:
    """Lines [i, j) that hold `name:` and, for a block sequence, its `- item` lines."""
    for i in range(start + 1, end):
        if re.match(rf"^{indent}{name}:", lines[i]):
            j = i + 1
            while j < end and lines[j].lstrip().startswith("- ") and lines[j].startswith(indent):
                j += 1
            return i, j
    return None


def _indent(line: str) -> str:
    return line[:len(line) - len(line.lstrip())]


def _render(name: str, value: object, old: list[str], indent: str) -> list[str]:
    """The new lines of one field, in the style of the old ones (a trailing comment, a flow or block window)."""
    if not isinstance(value, list):
        comment = re.search(r"(\s+#.*)$", old[0].rstrip("\n")) if old else None
        return [f"{indent}{name}: {_yaml_scalar(name, value)}{comment.group(1) if comment else ''}\n"]
    first, last = value  # the window, the one list field
    if old and "[" in old[0]:
        return [f"{indent}window: [{first}, {last}]\n"]
    item_indent = _indent(old[1]) if len(old) > 1 else indent
    return [f"{indent}window:\n", f"{item_indent}- {first}\n", f"{item_indent}- {last}\n"]


def replace_result_fields(text: str, values: dict[str, object]) -> str:
    lines = text.splitlines(keepends=True)
    start, end = _block_bounds(lines, "result")
    indent = _indent(next((line for line in lines[start + 1:end] if line.strip()), "  "))
    for name, value in values.items():
        at, stop = _field_span(lines, start, end, indent, name) or (end, end)
        if at == end and not lines[at - 1].endswith("\n"):
            lines[at - 1] += "\n"
        new = _render(name, value, lines[at:stop], indent)
        lines[at:stop] = new
        end += len(new) - (stop - at)
    return "".join(lines)


def _check_round_trip(written: dict, values: dict[str, object], path: Path) -> None:
    for name, value in values.items():
        read = written.get(name)
        close = isinstance(value, float) and isinstance(read, (int, float)) and abs(read - value) < 1e-12
        if read != value and not close:
            raise UserError(f"{path}: result.{name} would read back as {read!r}, not {value!r}; "
                            "the result block has a layout this writer does not handle; edit it by hand")


def write_result(path: Path, result: Measured, tables: ReferenceTables | None = None) -> list[str]:
    """Write the measured fields into the recipe; returns the fields written. The recipe is replaced only when the
    new text validates against `tables` (default: the recipe's own catalog's, as `measure` priced it); otherwise it
    is left as it was and the errors are reported."""
    from openrecipes.catalog.validate import validate_document
    from openrecipes.measure.result import recipe_tables

    path = Path(path)
    check_regular(path, "--write")
    figures = result.as_json()  # as YAML reads them back: the window a list, the date text
    values = {name: figures[name] for name in WRITTEN_FIELDS if figures[name] is not None}
    updated = replace_result_fields(path.read_text(encoding="utf-8"), values)
    doc = parse_yaml(updated, path)  # the new text read as the recipe will be: its path, its folders
    _check_round_trip((doc.data or {}).get("result") or {}, values, path)
    report = validate_document(doc, tables or recipe_tables(path))
    if not report.ok:
        shown = "; ".join(f"{e.field}: {e.message}" for e in report.errors[:3])
        raise UserError(f"{path}: the measured result does not validate ({shown}); the recipe was left unchanged")
    write_atomic(path, updated)
    return list(values)
