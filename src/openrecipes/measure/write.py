"""`measure --write`: replace the measured fields of a recipe's `result:` block in place, atomically.

Only those lines change: the rest of the YAML text (comments, key order, quoting, line breaks) is kept byte for
byte. The new text is written to a temporary file beside the recipe and validated there; only a valid text is moved
over the recipe (os.replace), so the recipe is never seen half-written or invalid.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

import yaml

from openrecipes.errors import UserError
from openrecipes.measure.result import PUBLISHED_DECIMALS

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


def _render(name: str, value: object, old: list[str], indent: str) -> list[str]:
    """The new lines of one field, in the style of the old ones (a trailing comment, a flow or block window)."""
    if name != "window":
        comment = re.search(r"(\s+#.*)$", old[0].rstrip("\n")) if old else None
        return [f"{indent}{name}: {_yaml_scalar(name, value)}{comment.group(1) if comment else ''}\n"]
    first, last = value
    if old and "[" in old[0]:
        return [f"{indent}window: [{first}, {last}]\n"]
    item_indent = re.match(r"\s*", old[1]).group(0) if len(old) > 1 else indent
    return [f"{indent}window:\n", f"{item_indent}- {first}\n", f"{item_indent}- {last}\n"]


def replace_result_fields(text: str, values: dict[str, object]) -> str:
    lines = text.splitlines(keepends=True)
    start, end = _block_bounds(lines, "result")
    indent = re.match(r"\s*", next((line for line in lines[start + 1:end] if line.strip()), "  ")).group(0)
    for name, value in values.items():
        at, stop = _field_span(lines, start, end, indent, name) or (end, end)
        if at == end and not lines[at - 1].endswith("\n"):
            lines[at - 1] += "\n"
        new = _render(name, value, lines[at:stop], indent)
        lines[at:stop] = new
        end += len(new) - (stop - at)
    return "".join(lines)


def _check_round_trip(text: str, values: dict[str, object], path: Path) -> None:
    written = (yaml.safe_load(text) or {}).get("result", {})
    for name, value in values.items():
        read = written.get(name)
        read = str(read) if name == "measured" else read
        close = isinstance(value, float) and isinstance(read, (int, float)) and abs(read - value) < 1e-12
        if read != value and not close:
            raise UserError(f"{path}: result.{name} would read back as {read!r}, not {value!r}; "
                            "the result block has a layout this writer does not handle; edit it by hand")


def _write_beside(path: Path, text: str) -> Path:
    """A temporary file in the recipe's folder: os.replace is atomic within one file system, and the validator
    reads the folders a recipe lies in, so the temporary file validates exactly as the recipe will."""
    handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        out.write(text)
        out.flush()
        os.fsync(out.fileno())
    os.chmod(temp, path.stat().st_mode & 0o777)
    return Path(temp)


def write_result(path: Path, result: dict) -> list[str]:
    """Write the measured fields into the recipe; returns the fields written. The recipe is replaced only when the
    new text validates; otherwise it is left as it was and the errors are reported."""
    from openrecipes.catalog import validate_file

    path = Path(path)
    values = {name: result[name] for name in WRITTEN_FIELDS if result.get(name) is not None}
    updated = replace_result_fields(path.read_text(encoding="utf-8"), values)
    _check_round_trip(updated, values, path)
    temp = _write_beside(path, updated)
    try:
        report = validate_file(temp)
        if not report.ok:
            shown = "; ".join(f"{e.field}: {e.message}" for e in report.errors[:3])
            raise UserError(f"{path}: the measured result does not validate ({shown}); the recipe was left unchanged")
        os.replace(temp, path)
    finally:
        temp.unlink(missing_ok=True)
    return list(values)
