"""Validation of catalog files: the schema first, then every check in checks.py; all errors at once."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from openrecipes.catalog.checks import run_checks
from openrecipes.catalog.command import ParsedRun, read_run
from openrecipes.catalog.hardware import ReferenceTables, load_reference_tables, variants_of
from openrecipes.catalog.model import PublishedSummary, Recipe
from openrecipes.catalog.published import check_published
from openrecipes.catalog.yamlio import YamlDocument, read_yaml
from openrecipes.engines import registry
from openrecipes.errors import UserError
from openrecipes.textfile import require_utf8_name, shown
from openrecipes.verdict import Finding


@dataclass
class FileReport:
    path: Path
    errors: list[Finding] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)  # shown, yet the entry stays valid
    unreadable: bool = False
    entry: Recipe | PublishedSummary | None = None
    command: ParsedRun | None = None  # a recipe's run script as the checks read it

    @property
    def ok(self) -> bool:
        return not self.errors and not self.unreadable

    def as_json(self) -> dict:
        return {
            "path": str(self.path),
            "ok": self.ok,
            "errors": [e.as_located_json() for e in self.errors],
            "findings": [e.as_located_json() for e in self.findings],
        }


def _missing_hint(dotted: str, doc: YamlDocument, tables: ReferenceTables) -> str:
    """What to add for a missing field where the choices are known (gpu.variant, engine)."""
    if dotted == "engine":
        return f"; the engine its run command starts, one of: {', '.join(registry.names())}"
    if dotted != "gpu.variant":
        return ""
    gpu = doc.data.get("gpu") if isinstance(doc.data, dict) else None
    gpu_type = gpu.get("type") if isinstance(gpu, dict) else None
    known = variants_of(str(gpu_type), tables) or list(tables.variants)
    return f"; the variant it ran on, one of: {', '.join(known)} (hardware/gpus.yaml)"


def _schema_errors(error: ValidationError, doc: YamlDocument, tables: ReferenceTables) -> list[Finding]:
    out = []
    for item in error.errors(include_url=False):
        # Union/tagged members add their type name to the location; a user knows only the YAML keys.
        loc = tuple(p for p in item["loc"] if not (isinstance(p, str) and p[:1].isupper()))
        dotted = ".".join(str(part) for part in loc)
        message = item["msg"]
        if item["type"] == "missing":
            message = f"is missing; add it (see schema/recipe.schema.yaml){_missing_hint(dotted, doc, tables)}"
        elif item["type"] == "extra_forbidden":
            message = "is not a field of the schema; remove it or fix its spelling (see schema/recipe.schema.yaml)"
        elif "input" in item and not isinstance(item["input"], (dict, list)):
            got = repr(item["input"])
            message = f"{message} (got {got if len(got) <= 80 else got[:60] + '...'})"
        out.append(Finding.at(dotted, message, doc.line_of(dotted)))
    return out


def parse_entry(doc: YamlDocument) -> Recipe | PublishedSummary:
    """The typed entry of a loaded document; raises pydantic's ValidationError."""
    data = doc.data
    if isinstance(data, dict) and data.get("kind") == "published_summary":
        return PublishedSummary.model_validate(data)
    return Recipe.model_validate(data)


def validate_document(doc: YamlDocument, tables: ReferenceTables) -> FileReport:
    report = FileReport(path=doc.path)
    if not isinstance(doc.data, dict):
        report.errors.append(Finding.at("", "the file must be a YAML mapping of recipe fields", 1))
        return report
    try:
        entry = parse_entry(doc)
    except ValidationError as error:
        report.errors.extend(_schema_errors(error, doc, tables))
        return report
    report.entry = entry
    if isinstance(entry, Recipe):
        command = read_run(entry.run)  # read once for every check and caller
        report.command = command if isinstance(command, ParsedRun) else None
        report.errors.extend(_located(doc, run_checks(entry, doc, tables, command)))
    else:
        errors, findings = check_published(entry, tables)
        report.errors.extend(_located(doc, errors))
        report.findings.extend(_located(doc, findings))
    return report


def _located(doc: YamlDocument, findings: Iterable[Finding]) -> list[Finding]:
    return [dataclasses.replace(f, line=doc.line_of(f.field)) for f in findings]


def validate_file(path: Path, tables: ReferenceTables | None = None) -> FileReport:
    tables = tables or load_reference_tables()
    try:
        require_utf8_name(Path(path))
        doc = read_yaml(Path(path))
    except UserError as error:
        return FileReport(path=Path(shown(path)), errors=[Finding.at("", str(error))], unreadable=True)
    return validate_document(doc, tables)


def recipe_files(paths: list[Path]) -> list[Path]:
    """The YAML files named, with folders expanded; a missing path is a UserError."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = sorted(path.rglob("*.yaml"))
            for link in (p for p in found if p.is_symlink() and not p.is_file()):  # a loop, dangling, a folder
                raise UserError(f"{shown(link)}: a symbolic link that leads to no file (a loop, a missing target or "
                                "a folder); remove it or link a recipe file")
            files.extend(p for p in found if p.is_file())
        elif path.exists():
            files.append(path)
        else:
            raise UserError(f"{shown(path)}: no such file or folder; give recipe files or a catalog folder")
    return files
