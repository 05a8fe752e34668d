"""The catalog's names as a user may type them: a model (its card's `name`, or its file name) and a GPU type, in any
case and with `-` or `_`, resolved to the one spelling the tables use. Every command that takes such a name calls
these before looking anything up."""

from __future__ import annotations

from openrecipes.catalog.hardware import ReferenceTables
from openrecipes.names import canonical, spelling_key


def model_name(given: str, tables: ReferenceTables) -> str:
    """The card's `name` for `given`, which may also be the card's file name (models/glm-5.2-744b-a40b.yaml)."""
    by_file = {spelling_key(path.stem): name for name, path in tables.model_files.items()}
    return by_file.get(spelling_key(given)) or canonical(given, tables.models, "model", "models/*.yaml")


def gpu_name(given: str, tables: ReferenceTables) -> str:
    return canonical(given, tables.gpus, "GPU type", "hardware/gpus.yaml")
