"""schema/recipe.schema.yaml is generated from the typed model, never edited by hand."""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import TypeAdapter

from openrecipes.catalog.model import PublishedSummary, Recipe

SCHEMA_PATH = Path("schema") / "recipe.schema.yaml"
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
