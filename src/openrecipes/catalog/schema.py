"""schema/recipe.schema.yaml is generated from the typed model, never edited by hand."""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import TypeAdapter

from openrecipes.catalog.model import PublishedSummary, Recipe
from openrecipes.errors import UserError
from openrecipes.textfile import MIB, read_inside

SCHEMA_PATH = Path("schema") / "recipe.schema.yaml"
MAX_SCHEMA_BYTES = 4 * MIB  # the schema is about 60 KB
HEADER = "# Generated from src/openrecipes/catalog/model.py by `openrecipes schema`; do not edit by hand.\n"


def recipe_json_schema() -> dict:
    schema = TypeAdapter(Recipe | PublishedSummary).json_schema(mode="validation")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://openrecipes.dev/schema/recipe.schema.yaml",
        "title": "OpenRecipes recipe",
        "description": "One file of the catalog: a full recipe (the seed pages' format) or a published summary entry.",
        **schema,
    }


def render_schema() -> str:
    return HEADER + yaml.safe_dump(recipe_json_schema(), sort_keys=False, width=110, allow_unicode=True)


def checked_in_schema(root: Path) -> str:
    """The schema file under `root` as committed ("" when there is none): a regular file inside `root`, read
    bounded, so a FIFO there never blocks `schema --check` and a link to /dev/zero is refused, not read."""
    target = root / SCHEMA_PATH
    if not target.exists() and not target.is_symlink():
        return ""
    data = read_inside(root, target, MAX_SCHEMA_BYTES, "schema")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise UserError(f"{target}: not UTF-8 text; run `openrecipes schema --root {root}` to write it again") from None
