"""CLI of the catalog room: validate, list, show, schema."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from openrecipes import figures
from openrecipes.atomic import starts_with, write_output
from openrecipes.catalog import render
from openrecipes.catalog.entry_figures import published_of
from openrecipes.catalog.evidence import EvidenceLevel, evidence_level
from openrecipes.catalog.hardware import ReferenceTables, load_reference_tables
from openrecipes.catalog.leaderboard import leaderboards_view, selection
from openrecipes.catalog.model import PublishedSummary, Recipe
from openrecipes.catalog.model_add import add_model
from openrecipes.catalog.paths import catalog_root, default_catalog_root, relative_path
from openrecipes.catalog.schema import HEADER, SCHEMA_PATH, checked_in_schema, render_schema
from openrecipes.catalog.store import CatalogEntry, load_catalog, validate_catalog
from openrecipes.catalog.validate import recipe_files, validate_file
from openrecipes.errors import EXIT_CHECK_FAILED, UserError
from openrecipes.jsonout import json_text

CatalogOption = Annotated[
    Path | None,
    typer.Option(
        "--catalog", exists=True, file_okay=False, help="folder holding recipes/ (default: this checkout's catalog)"),
]


def register(app: typer.Typer) -> None:
    app.command("validate")(validate)
    app.command("list")(list_recipes)
    app.command("show")(show)
    app.command("schema")(schema)
    app.add_typer(model_app, name="model")


def validate(
    paths: Annotated[list[Path] | None, typer.Argument(help="recipe files or folders")] = None,
    catalog: CatalogOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="print a JSON list of {path, ok, errors}")] = False,
) -> None:
    """Validate recipes: the schema, layout arithmetic, every published figure and the run command.
    Exit 0 when all are valid, 1 when any is invalid, 2 when a file cannot be read."""
    if paths:
        tables = load_reference_tables((catalog or default_catalog_root()).resolve())
        reports = [validate_file(p, tables) for p in recipe_files(paths)]
    else:
        reports = validate_catalog(catalog or default_catalog_root())
    if as_json:
        print(json_text([r.as_json() for r in reports]))
    else:
        render.validation_reports(Console(), reports)
    unreadable = [r for r in reports if r.unreadable]
    if unreadable:  # bad input: besides the report, one line on stderr, as every exit 2 has
        more = f" (and {len(unreadable) - 1} more file(s) that cannot be read)" if len(unreadable) > 1 else ""
        raise UserError(unreadable[0].errors[0].message + more)
    if not all(r.ok for r in reports):
        raise typer.Exit(EXIT_CHECK_FAILED)


def list_recipes(
    catalog: CatalogOption = None,
    model: Annotated[str | None, typer.Option("--model", help="only this model's entries (e.g. qwen3-8b)")] = None,
    gpu: Annotated[str | None, typer.Option("--gpu", help="only entries on this GPU type (e.g. H200)")] = None,
    evidence: Annotated[str | None, typer.Option(
        "--evidence", help="only entries of this evidence level: re-derived, audited, author-reported or predicted"),
    ] = None,
    as_json: Annotated[bool, typer.Option(
        "--json", help="print {boards: [{model, gpu_type, row_tokens, global_batch, precision, recipes}], summaries, "
        "planned}, each entry with its evidence level"),
    ] = False,
) -> None:
    """The leaderboards: each model on each GPU type and workload, ranked by tokens/s per GPU; then the published
    entries and planned recipes, never ranked. Each entry with its evidence level. Exit 2 on an unknown filter."""
    loaded = load_catalog(catalog or default_catalog_root())
    chosen = selection(loaded, model, gpu, evidence)
    if as_json:
        print(json_text(leaderboards_view(loaded, chosen).as_json()))
        return
    render.leaderboards(Console(), loaded, chosen)


def show(
    recipe: Annotated[str, typer.Argument(help="recipe name, slug or file (in a catalog or not)")],
    catalog: CatalogOption = None,
    as_json: Annotated[bool, typer.Option(
        "--json", help="print {path, slug, evidence, token_budget, figures, recipe}: the figures `show` lists, each "
        "by name (a computed one for the token budget), and the recipe's every field as the schema names it"),
    ] = False,
) -> None:
    """One recipe in full: its evidence level, figures, layout, checks, stack and the command."""
    entry, tables, slug = _shown(recipe, catalog)
    if as_json:
        print(json_text(ShownEntry(entry.path.as_posix(), slug, evidence_level(entry.entry),
                                   figures.DEFAULT_TOKEN_BUDGET, shown_values(entry.entry), entry.entry)))
        return
    render.recipe(Console(), tables, entry, slug or recipe)


def _shown(recipe: str, catalog: Path | None) -> tuple[CatalogEntry, ReferenceTables, str | None]:
    """A recipe file as given, read with the tables of the catalog it lies in; else the catalog's entry by name or
    slug. The slug is None for a file outside any catalog (it has no permalink)."""
    path = Path(recipe)
    if not path.is_file():
        loaded = load_catalog(catalog or default_catalog_root())
        entry = loaded.find(recipe)
        return entry, loaded.tables, entry.slug
    inside = catalog_root(path)
    root = (catalog or inside or default_catalog_root()).resolve()
    tables = load_reference_tables(root)
    report = validate_file(path, tables)
    if report.entry is None or not report.ok:
        error = report.errors[0]
        where = "" if report.unreadable else f"{path}:{error.line or 1}: {error.field or 'file'}: "
        raise UserError(f"{where}{error.message} (run `openrecipes validate {path}`)")
    entry = CatalogEntry(Path(relative_path(path, root)), report.entry)
    return entry, tables, entry.slug if inside is not None else None


@dataclass(frozen=True)
class ShownEntry:
    """A recipe or published summary as `show --json` prints it: where it lives, its evidence level and every field
    it holds."""

    path: str
    slug: str | None  # None for a recipe file outside any catalog
    evidence: EvidenceLevel
    token_budget: int  # the tokens a computed figure (time to train) is worked out for
    figures: dict[str, float | None]  # each figure `show` lists, as the entry publishes it or worked out
    recipe: Recipe | PublishedSummary


def shown_values(entry: Recipe | PublishedSummary) -> dict[str, float | None]:
    return {f.name: published_of(f, entry) for f in figures.shown_on("show")}


def schema(
    check: Annotated[bool, typer.Option("--check", help="exit 1 if the checked-in schema differs")] = False,
    root: Annotated[Path, typer.Option("--root", help="repository root")] = Path("."),
) -> None:
    """Write schema/recipe.schema.yaml from the typed model (or check it is current)."""
    target = root / SCHEMA_PATH
    text = render_schema()
    if check:
        if checked_in_schema(root) != text:
            Console(stderr=True).print(f"{target} is stale; run `openrecipes schema` and commit it", markup=False)
            raise typer.Exit(EXIT_CHECK_FAILED)
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    write_output(target, text, "--root", starts_with(HEADER))  # only ever over the schema it wrote
    typer.echo(f"wrote {target}")


model_app = typer.Typer(help="Model cards: derive one from a Hugging Face config.json.", no_args_is_help=True)


@model_app.command("add")
def model_add(
    config: Annotated[Path, typer.Argument(help="the model's Hugging Face config.json")],
    name: Annotated[str, typer.Option("--name", help="card name, a lowercase slug (e.g. llama-3.1-70b)")],
    out: Annotated[Path | None, typer.Option("--out", help="card file (default: models/<name>.yaml)")] = None,
    origin: Annotated[str | None, typer.Option(
        "--origin", help="where the config came from (repository, path, commit); stored in the card")] = None,
) -> None:
    """Write a model card derived from a config.json: every parameter count, the attention and MoE shape; the config
    is kept beside the card as configs/<name>.json. Exit 2 on a config it cannot derive a card from."""
    target = out or default_catalog_root() / "models" / f"{name}.yaml"
    added = add_model(config, name, target, origin)
    card = added.card
    typer.echo(f"wrote {added.card_path} ({card.family}, {card.total_params:,} parameters, "
               f"{card.active_params.count:,} active) and {added.config_path}")
