"""`openrecipes audit`: each recipe's validation, its re-derivation from raw logs, duplicates on its board.

The whole catalog is read once (references and duplicates need every recipe); a site build audits it once.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from openrecipes.audit.duplicates import Entry, duplicate_findings
from openrecipes.audit.evidence import AuditReport, Finding
from openrecipes.audit.pins import COMMAND_NAME
from openrecipes.audit.rederive import Evidence, check_logged_recipe, check_reproductions
from openrecipes.audit.rows import RowsRebuilder
from openrecipes.catalog.hardware import ReferenceTables, load_reference_tables
from openrecipes.catalog.model import Recipe
from openrecipes.catalog.paths import relative_path
from openrecipes.catalog.validate import FileReport, recipe_files, validate_document
from openrecipes.catalog.yamlio import YamlDocument, read_yaml
from openrecipes.errors import UserError
from openrecipes.verify.config import Rules, load_rules


@dataclass(frozen=True)
class Loaded:
    doc: YamlDocument
    report: FileReport


def _load(path: Path, tables: ReferenceTables) -> Loaded:
    doc = read_yaml(path)  # an unreadable file is bad input (UserError, exit 2)
    return Loaded(doc, validate_document(doc, tables))


def catalog_entries(root: Path, tables: ReferenceTables) -> list[Entry]:
    """Every recipe of the catalog at root that validates."""
    files = recipe_files([root / "recipes"]) if (root / "recipes").is_dir() else []
    return [Entry(path.resolve(), item.report.entry) for path in files
            if isinstance((item := _load(path, tables)).report.entry, Recipe)]


def reference_run(recipe: Recipe, root: Path, catalog: list[Entry]) -> str | None:
    """The command of the reference arm: the recipe that measured runs.reference as its candidate, else the
    command.sh beside the reference's log."""
    wanted = recipe.runs.reference if recipe.runs else None
    if wanted is None:
        return None
    for other in catalog:
        if other.recipe.runs is not None and other.recipe.runs.candidate == wanted:
            return other.recipe.run
    script = root / wanted / COMMAND_NAME
    return script.read_text(encoding="utf-8") if script.is_file() else None


def _audit_one(loaded: Loaded, root: Path, tables: ReferenceTables, rules: Rules, catalog: list[Entry],
               rows: RowsRebuilder | None) -> AuditReport:
    report, doc = loaded.report, loaded.doc
    shown = Path(relative_path(report.path, root))
    findings = [Finding(e.field, doc.raw.get(e.field), None, e.message) for e in report.errors]
    recipe = report.entry
    if not isinstance(recipe, Recipe):  # a published summary: two figures copied from a seed page, no more
        return AuditReport(shown, has_logs=False, findings=tuple(findings))
    # A recipe that parsed is re-derived even when a check failed: the user sees what its logs say as well.
    ev = Evidence(recipe, doc, root, tables, rules, reference_run(recipe, root, catalog))
    if recipe.runs is not None:
        findings += check_logged_recipe(ev)
    findings += check_reproductions(ev)
    findings += duplicate_findings(Entry(report.path.resolve(), recipe), catalog, rules, root)
    if rows is not None:
        findings += rows.findings(recipe)
    return AuditReport(shown, has_logs=recipe.runs is not None, findings=tuple(findings))


def audit(root: Path, paths: list[Path] | None = None, rebuild_rows: bool = False) -> list[AuditReport]:
    """Audit the recipes named (files or folders), or every file under root/recipes; runs: paths are read
    relative to root. `rebuild_rows` rebuilds the rows of recipes built from the bundled demo corpus."""
    root = Path(root).resolve()
    if not (root / "recipes").is_dir() and not paths:
        raise UserError(f"{root}: no recipes/ folder; give --catalog the folder that holds recipes/ and runs/")
    tables, rules = load_reference_tables(root), load_rules()
    catalog_files = recipe_files([root / "recipes"]) if (root / "recipes").is_dir() else []
    loaded = {path.resolve(): _load(path, tables) for path in catalog_files}
    named = [p.resolve() for p in recipe_files(paths)] if paths else list(loaded)
    for path in named:
        if path not in loaded:
            loaded[path] = _load(path, tables)
    in_catalog = {path.resolve() for path in catalog_files}
    catalog = [Entry(path, item.report.entry) for path, item in loaded.items()
               if path in in_catalog and isinstance(item.report.entry, Recipe)]
    rows = RowsRebuilder() if rebuild_rows else None
    return [_audit_one(loaded[path], root, tables, rules, catalog, rows) for path in named]
