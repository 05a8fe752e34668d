"""The whole catalog loaded at once: every valid recipe and summary entry, with its permalink slug."""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from openrecipes.catalog.command import ParsedRun
from openrecipes.catalog.hardware import ReferenceTables, load_reference_tables
from openrecipes.catalog.model import PublishedSummary, Recipe
from openrecipes.catalog.published import ENTRY_PREFIX
from openrecipes.catalog.validate import FileReport, recipe_files, validate_file
from openrecipes.errors import UserError
from openrecipes.forked import forked_map

PARALLEL_FILES = 500  # a catalog of this many files is validated on every core


@dataclass(frozen=True)
class CatalogEntry:
    path: Path  # relative to the catalog root, e.g. recipes/gpt-oss-20b/h200/attune-tp1-pp1-ep4.yaml
    entry: Recipe | PublishedSummary

    @cached_property
    def slug(self) -> str:
        """Stable permalink id: <model folder>/<gpu folder>/<file stem> (asked for at every link of a build)."""
        return "/".join(self.path.with_suffix("").parts[-3:])

    @property
    def name(self) -> str:
        return self.path.stem

    @property
    def is_summary(self) -> bool:
        return isinstance(self.entry, PublishedSummary)


@dataclass(frozen=True)
class RecipeEntry(CatalogEntry):
    """A full recipe: layout, run command, stack and logs, which a published summary does not have."""

    entry: Recipe


@dataclass(frozen=True)
class SummaryEntry(CatalogEntry):
    entry: PublishedSummary


@dataclass(frozen=True)
class Catalog:
    root: Path
    tables: ReferenceTables
    entries: tuple[CatalogEntry, ...]  # measured recipes and published summaries: what is listed and ranked
    planned: tuple[CatalogEntry, ...] = ()  # `status: planned` recipes (predictions never run): ranked nowhere
    # The public record: published entries the importers wrote (recipes/*/*/record-*.yaml, docs/public-record.md),
    # author-reported figures of other people's runs, kept apart from what the boards and model pages compare.
    record: tuple[SummaryEntry, ...] = ()

    @property
    def recipes(self) -> list[RecipeEntry]:
        return [e for e in self.entries if isinstance(e, RecipeEntry)]

    @property
    def summaries(self) -> list[SummaryEntry]:
        return [e for e in self.entries if isinstance(e, SummaryEntry)]

    def find(self, name_or_path: str) -> CatalogEntry:
        """An entry (a recipe, planned recipe or published entry) by file path, slug or file name (unique)."""
        wanted = name_or_path.removesuffix(".yaml")
        matches = [e for e in (*self.entries, *self.planned, *self.record)
                   if wanted in (e.name, e.slug, str(e.path.with_suffix("")))
                   or Path(name_or_path).resolve() == (self.root / e.path).resolve()]
        if len(matches) != 1:
            known = ", ".join(e.slug for e in self.recipes)
            reason = "no recipe" if not matches else f"{len(matches)} recipes"
            raise UserError(f"{reason} named '{name_or_path}' in {self.root}/recipes; known: {known}")
        return matches[0]


def validate_catalog(root: Path) -> list[FileReport]:
    recipes_dir = Path(root) / "recipes"
    if not recipes_dir.is_dir():
        raise UserError(f"{root}: no recipes/ folder; give --catalog the folder that holds recipes/")
    tables = load_reference_tables(Path(root).resolve())
    return forked_map(lambda path: validate_file(path, tables), recipe_files([recipes_dir]), PARALLEL_FILES)


def load_catalog(root: Path) -> Catalog:
    """Every entry of the catalog; any invalid file is a UserError (nothing is published from a broken catalog)."""
    root = Path(root).resolve()
    reports = validate_catalog(root)
    broken = [r for r in reports if not r.ok]
    if broken:
        first = broken[0]
        error = first.errors[0]
        raise UserError(
            f"{first.path}:{error.line or 1}: {error.field or 'file'}: {error.message} "
            f"({sum(len(r.errors) for r in broken)} error(s) in {len(broken)} file(s); run `openrecipes validate`)"
        )
    # Paths below root as found (not resolved): a recipes/ folder may be a symbolic link to elsewhere.
    entries = [_entry(Path(os.path.abspath(r.path)).relative_to(root), r.entry) for r in reports]
    planned = tuple(e for e in entries if getattr(e.entry, "status", None) == "planned")
    record = tuple(e for e in entries if isinstance(e, SummaryEntry) and e.name.startswith(ENTRY_PREFIX))
    apart = {id(e) for e in (*planned, *record)}  # by identity: comparing entries field by field is quadratic
    return Catalog(root=root, tables=load_reference_tables(root),
                   entries=tuple(e for e in entries if id(e) not in apart), planned=planned, record=record)


def _entry(path: Path, entry: Recipe | PublishedSummary | None) -> CatalogEntry:
    if isinstance(entry, Recipe):
        return RecipeEntry(path, entry)
    if isinstance(entry, PublishedSummary):
        return SummaryEntry(path, entry)
    raise ValueError(f"{path}: a valid report carries its entry")


def load_recipe(path: Path) -> Recipe:
    """A valid recipe, or a UserError naming the file, field, line and the fix of its first problems."""
    return load_recipe_and_command(path)[0]


def load_recipe_and_command(path: Path) -> tuple[Recipe, ParsedRun]:
    """A valid recipe and its run script as the validator read it (one reading for the checks and the caller)."""
    report = validate_file(Path(path))
    if report.unreadable:
        raise UserError(report.errors[0].message)
    if not report.ok:
        shown = "; ".join(
            f"{e.field or 'file'}{f' (line {e.line})' if e.line else ''}: {e.message}" for e in report.errors[:3]
        )
        more = f" (+{len(report.errors) - 3} more; run `openrecipes validate {path}`)" if len(report.errors) > 3 else ""
        raise UserError(f"{path}: {shown}{more}")
    if not isinstance(report.entry, Recipe) or report.command is None:
        raise UserError(f"{path}: a published summary entry, not a runnable recipe")
    return report.entry, report.command
