"""CLI of the catalog room: validate, list, show, schema."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from openrecipes.atomic import starts_with, write_output
from openrecipes.catalog import render
from openrecipes.catalog.hardware import load_reference_tables
from openrecipes.catalog.paths import default_catalog_root
from openrecipes.catalog.schema import HEADER, SCHEMA_PATH, render_schema
from openrecipes.catalog.store import load_catalog, validate_catalog
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


def list_recipes(catalog: CatalogOption = None) -> None:
    """The leaderboards: each model on each GPU type and workload, ranked by tokens/s per GPU."""
    render.leaderboards(Console(), load_catalog(catalog or default_catalog_root()))


def show(
    recipe: Annotated[str, typer.Argument(help="recipe name, slug or path")], catalog: CatalogOption = None
) -> None:
    """One recipe in full: figures, layout, checks, stack and the command."""
    loaded = load_catalog(catalog or default_catalog_root())
    render.recipe(Console(), loaded, loaded.find(recipe))


def schema(
    check: Annotated[bool, typer.Option("--check", help="exit 1 if the checked-in schema differs")] = False,
    root: Annotated[Path, typer.Option("--root", help="repository root")] = Path("."),
) -> None:
    """Write schema/recipe.schema.yaml from the typed model (or check it is current)."""
    target = root / SCHEMA_PATH
    text = render_schema()
    if check:
        current = target.read_text(encoding="utf-8") if target.exists() else ""
        if current != text:
            Console(stderr=True).print(f"{target} is stale; run `openrecipes schema` and commit it", markup=False)
            raise typer.Exit(EXIT_CHECK_FAILED)
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    write_output(target, text, "--root", starts_with(HEADER))  # only ever over the schema it wrote
    typer.echo(f"wrote {target}")
