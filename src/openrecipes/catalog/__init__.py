"""The catalog room: typed recipes, loading with file:line errors, validation, leaderboards."""

from __future__ import annotations

from pathlib import Path

from openrecipes.catalog.model import PublishedSummary, Recipe
from openrecipes.catalog.validate import FileReport, validate_file
from openrecipes.errors import UserError


def load_recipe(path: Path) -> Recipe:
    """A valid recipe, or a UserError naming the file, field, line and the fix of its first problems."""
    report = validate_file(Path(path))
    if report.unreadable:
        raise UserError(report.errors[0].message)
    if not report.ok:
        shown = "; ".join(
            f"{e.field or 'file'}{f' (line {e.line})' if e.line else ''}: {e.message}" for e in report.errors[:3]
        )
        more = f" (+{len(report.errors) - 3} more; run `openrecipes validate {path}`)" if len(report.errors) > 3 else ""
        raise UserError(f"{path}: {shown}{more}")
    if not isinstance(report.entry, Recipe):
        raise UserError(f"{path}: a published summary entry, not a runnable recipe")
    return report.entry


__all__ = ["FileReport", "PublishedSummary", "Recipe", "load_recipe", "validate_file"]
