"""The published JSON Schema describes every field and accepts exactly the catalog."""

from __future__ import annotations

import jsonschema
import yaml
from conftest import REPO

from openrecipes.catalog.validate import recipe_files
from openrecipes.catalog.yamlio import read_yaml

SCHEMA = yaml.safe_load((REPO / "schema/recipe.schema.yaml").read_text())


def test_every_field_is_described():
    undocumented = [f"{name}.{field}" for name, definition in SCHEMA["$defs"].items()
                    for field, spec in definition.get("properties", {}).items() if not spec.get("description")]
    assert undocumented == []


def test_schema_accepts_every_catalog_file_and_is_2020_12():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    validator = jsonschema.Draft202012Validator(SCHEMA, format_checker=jsonschema.FormatChecker())
    for path in recipe_files([REPO / "recipes"]):
        errors = list(validator.iter_errors(read_yaml(path).data))
        assert errors == [], (path, errors[:1])
