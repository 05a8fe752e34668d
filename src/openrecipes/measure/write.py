"""`measure --write`: replace the measured fields of a recipe's `result:` block in place, atomically.

Only those lines change (openrecipes.yamledit): the rest of the YAML text (comments, key order, quoting, line breaks)
is kept byte for byte. The new text is validated first, read under the recipe's own path against its catalog's
tables; only a valid one replaces the recipe, through openrecipes.atomic.write_atomic: never half-written or invalid.
The recipe's lock (openrecipes.atomic.locked) is held from reading it to replacing it, so no other writer's update
is lost.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from openrecipes import figures
from openrecipes.atomic import check_regular, locked, write_atomic
from openrecipes.catalog.yamlio import parse_yaml
from openrecipes.errors import UserError
from openrecipes.textfile import shown
from openrecipes.yamledit import set_fields

if TYPE_CHECKING:
    from openrecipes.catalog.hardware import ReferenceTables
    from openrecipes.measure.result import Measured

# The result fields a measurement sets: the stored figures and what they were measured over; the others
# (active_params, runs, notes) are the author's.
WRITTEN_FIELDS = (*(f.name for f in figures.STORED), "measured", "steps_per_run", "window", "window_tokens")
_DECIMALS = {f.name: f.decimals for f in figures.STORED}


def _yaml_scalar(name: str, value: object) -> str:
    if isinstance(value, float):
        # Fixed-point at the published precision, trailing zeros dropped as the seeds write them (146.8, 0.0158):
        # never '1e-05', which YAML 1.1 would read back as a string.
        text = f"{value:.{_DECIMALS.get(name, 6)}f}".rstrip("0")
        return text + "0" if text.endswith(".") else text
    return str(value)


def replace_result_fields(text: str, values: dict[str, object], where: str = "the recipe") -> str:
    return set_fields(text, {("result", name): [str(item) for item in value] if isinstance(value, list)
                             else _yaml_scalar(name, value) for name, value in values.items()},
                      where, "edit its result block by hand (see schema/recipe.schema.yaml)")


def write_result(path: Path, result: Measured, tables: ReferenceTables | None = None) -> list[str]:
    """Write the measured fields into the recipe; returns the fields written. The recipe is replaced only when the
    new text validates against `tables` (default: the recipe's own catalog's, as `measure` priced it); otherwise it
    is left as it was and the errors are reported."""
    from openrecipes.catalog.validate import validate_document
    from openrecipes.measure.result import recipe_tables

    path = Path(path)
    check_regular(path, "--write")
    measured = result.as_json()  # as YAML reads them back: the window a list, the date text
    values = {name: measured[name] for name in WRITTEN_FIELDS if measured[name] is not None}
    with locked(path):  # another writer's update (a reproduction) is read here, and kept
        updated = replace_result_fields(path.read_text(encoding="utf-8"), values, shown(path))
        doc = parse_yaml(updated, path)  # the new text read as the recipe will be: its path, its folders
        report = validate_document(doc, tables or recipe_tables(path))
        if not report.ok:
            errors = "; ".join(f"{e.field}: {e.message}" for e in report.errors[:3])
            raise UserError(f"{path}: the measured result does not validate ({errors}); the recipe was left "
                            "unchanged")
        write_atomic(path, updated)
    return list(values)
