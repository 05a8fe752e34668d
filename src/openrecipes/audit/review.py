"""`openrecipes audit`: each recipe's validation, its re-derivation from raw logs, duplicates on its board; each
probe file of the catalog's hardware/probes/ re-derived (audit/probes.py).

The whole catalog is read once (references and duplicates need every recipe). A site build audits the catalog it
has already loaded and validated (`audit_catalog`): only recipes with logs or reproductions are read again, for
the figures as written.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from openrecipes.audit.duplicates import DuplicateIndex, Entry
from openrecipes.audit.evidence import AuditReport
from openrecipes.audit.excerpts import excerpt_findings
from openrecipes.audit.probes import catalog_probes, probe_report
from openrecipes.audit.rederive import AuditInputs, check_logged_recipe, check_reproductions
from openrecipes.audit.rows import RowsRebuilder
from openrecipes.catalog.evidence import evidence_level
from openrecipes.catalog.hardware import ReferenceTables, load_reference_tables
from openrecipes.catalog.model import PublishedSummary, Recipe
from openrecipes.catalog.paths import RUN_COMMAND, evidence_problem, relative_path
from openrecipes.catalog.store import PARALLEL_FILES, Catalog, CatalogEntry
from openrecipes.catalog.validate import FileReport, recipe_files, validate_document
from openrecipes.catalog.yamlio import YamlDocument, read_yaml
from openrecipes.errors import UserError
from openrecipes.forked import forked_map
from openrecipes.textfile import read_text
from openrecipes.verdict import Finding
from openrecipes.verify.config import MAX_SCRIPT_BYTES, Rules, load_rules


@dataclass(frozen=True)
class Reviewer:
    """What auditing any recipe of one catalog needs, read once."""

    root: Path
    tables: ReferenceTables
    rules: Rules
    catalog: list[Entry]
    duplicates: DuplicateIndex
    rows: RowsRebuilder | None

    @classmethod
    def of(cls, root: Path, tables: ReferenceTables, catalog: list[Entry], rebuild_rows: bool) -> Reviewer:
        rules = load_rules()
        return cls(root, tables, rules, catalog, DuplicateIndex(catalog, rules),
                   RowsRebuilder() if rebuild_rows else None)

    def review(self, path: Path, recipe: Recipe, doc: YamlDocument, findings: list[Finding]) -> AuditReport:
        # A recipe that parsed is re-derived even when a check failed: the user sees what its logs say as well.
        runs = recipe.runs
        if runs is not None and any(evidence_problem(self.root, folder, folder=True)
                                    for folder in (runs.candidate, runs.reference) if folder is not None):
            runs = None  # evidence outside the catalog is never followed; the validator's finding names it
        reference = reference_run(recipe, self.root, self.catalog) if runs is not None else None
        ev = AuditInputs(recipe, doc, self.root, self.tables, self.rules, reference)
        if runs is not None:
            findings += check_logged_recipe(ev, runs)
        findings += check_reproductions(ev)
        findings += self.duplicates.findings(Entry(path.resolve(), recipe), self.root)
        if self.rows is not None:
            findings += self.rows.findings(recipe)
        return AuditReport(Path(relative_path(path, self.root)), evidence_level(recipe), tuple(findings))


def _load(path: Path, tables: ReferenceTables) -> tuple[YamlDocument, FileReport]:
    doc = read_yaml(path)  # an unreadable file is bad input (UserError, exit 2)
    return doc, validate_document(doc, tables)


def _load_catalog(root: Path, tables: ReferenceTables) -> dict[Path, tuple[YamlDocument, FileReport]]:
    files = recipe_files([root / "recipes"]) if (root / "recipes").is_dir() else []
    return {path.resolve(): _load(path, tables) for path in files}


def catalog_entries(root: Path, tables: ReferenceTables,
                    loaded: dict[Path, tuple[YamlDocument, FileReport]] | None = None) -> list[Entry]:
    """Every recipe of the catalog at root that validates (`loaded`: the catalog's files, already read)."""
    return [Entry(path, report.entry) for path, (_, report) in (loaded or _load_catalog(root, tables)).items()
            if isinstance(report.entry, Recipe)]


def reference_run(recipe: Recipe, root: Path, catalog: list[Entry]) -> str | None:
    """The command of the reference arm: the recipe that measured runs.reference as its candidate, else the
    command.sh beside the reference's log."""
    wanted = recipe.runs.reference if recipe.runs else None
    if wanted is None:
        return None
    for other in catalog:
        if other.recipe.runs is not None and other.recipe.runs.candidate == wanted:
            return other.recipe.run
    script = root / wanted / RUN_COMMAND
    return read_text(script, MAX_SCRIPT_BYTES, "run script") if script.is_file() else None


def audit(root: Path, paths: list[Path] | None = None, rebuild_rows: bool = False) -> list[AuditReport]:
    """Audit the recipes named (files or folders), or every file under root/recipes; runs: paths are read
    relative to root. `rebuild_rows` rebuilds the rows of recipes built from the bundled demo corpus."""
    root = Path(root).resolve()
    if not (root / "recipes").is_dir() and not paths:
        raise UserError(f"{root}: no recipes/ folder; give --catalog the folder that holds recipes/ and runs/")
    tables = load_reference_tables(root)
    loaded = _load_catalog(root, tables)
    catalog = catalog_entries(root, tables, loaded)
    probes = [p for p in paths if p.suffix == ".json"] if paths else catalog_probes(root)
    named = [p.resolve() for p in recipe_files([p for p in paths if p not in probes])] if paths else list(loaded)
    for path in named:
        if path not in loaded:
            loaded[path] = _load(path, tables)
    reviewer = Reviewer.of(root, tables, catalog, rebuild_rows)
    reports = []
    for path in named:
        doc, report = loaded[path]
        findings = [Finding(e.field, doc.raw.get(e.field), None, e.message) for e in report.errors]
        if isinstance(report.entry, Recipe):
            reports.append(reviewer.review(path, report.entry, doc, findings))
        elif isinstance(report.entry, PublishedSummary):  # copied from a source; from an excerpt, re-derived
            findings += excerpt_findings(report.entry, doc, path, root)
            reports.append(AuditReport(Path(relative_path(path, root)), evidence_level(report.entry), tuple(findings)))
        else:  # a file whose schema failed
            reports.append(AuditReport(Path(relative_path(path, root)), "failed", tuple(findings)))
    return reports + [probe_report(path, root, tables) for path in probes]


def audit_catalog(catalog: Catalog) -> dict[str, AuditReport]:
    """Every entry of a loaded (so valid) catalog by slug; only recipes whose figures come from logs or carry
    reproductions are read again, for the figures as written."""
    entries = [Entry(catalog.root / e.path, e.entry) for e in catalog.recipes]
    reviewer = Reviewer.of(catalog.root, catalog.tables, entries, rebuild_rows=False)

    def report(entry: CatalogEntry) -> AuditReport:
        recipe, path = entry.entry, catalog.root / entry.path
        if not isinstance(recipe, Recipe):
            return AuditReport(entry.path, evidence_level(recipe))
        needs_text = recipe.runs is not None or recipe.reproductions
        return reviewer.review(path, recipe, read_yaml(path) if needs_text else YamlDocument(path, None), [])

    return {entry.slug: audited for entry, audited in
            zip(catalog.entries, forked_map(report, catalog.entries, PARALLEL_FILES), strict=True)}
