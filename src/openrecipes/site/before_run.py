"""The "Before you run" box of a recipe page: every outside input its command needs, found by code in the
command (catalog/command.py), each explained from site/run_inputs.yaml, plus the patch files the recipe names.

The recipe's published text is never changed: the box stands beside the command and explains it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path

from openrecipes.catalog.command import CommandError, ParsedRun, command_inputs, read_run
from openrecipes.catalog.store import Catalog, RecipeEntry
from openrecipes.catalog.yamlio import read_yaml

HERE = Path(__file__).parent
UNEXPLAINED = "not explained here: see the recipe's notes and its source"


@dataclass(frozen=True)
class RunInput:
    shown: str  # as the command writes it: $HF_CKPT, ${MODEL_ARGS[@]}, <slime entry module>, --flag VALUE
    kind: str  # variable, array, placeholder, program, file, patch
    source: str  # where it comes from
    set_to: str  # what to set it to (the notes' Markdown subset)


@lru_cache(maxsize=1)
def explanations() -> dict[str, dict[str, str]]:
    return read_yaml(HERE / "run_inputs.yaml").data


def _explained(key: str, shown: str, kind: str, fields: dict[str, str]) -> RunInput:
    known = explanations().get(key)
    if known is None:
        return RunInput(shown, kind, "unknown", UNEXPLAINED)
    return RunInput(shown, kind, known["from"], known["set_to"].format(**fields))


def parsed_run(run: str) -> ParsedRun:
    """A run script as the catalog read it when it loaded (its inputs here, its arguments for compare); callers only
    read it."""
    found = read_run(run)
    if isinstance(found, CommandError):
        raise CommandError(str(found))
    return found


_inputs = cache(command_inputs)


def run_inputs(catalog: Catalog, entry: RecipeEntry) -> list[RunInput]:
    recipe = entry.entry
    try:
        found, parsed = _inputs(recipe.run), parsed_run(recipe.run)
    except CommandError:
        return []  # the validator refuses such a command; nothing to explain
    build = recipe.workload.dataset.build
    model_file = catalog.tables.model_files.get(recipe.model)
    fields = {"build": build.name, "rows": f"{build.rows:,}", "model": recipe.model,
              "framework": recipe.stack.framework, "model_file": model_file.name if model_file else "?"}
    inputs = [_explained(name, f"${name}", "variable", fields) for name in found.variables]
    inputs += [_explained(name, f"${{{name}[@]}}", "array", fields) for name in found.arrays]
    inputs += [_explained(text, text, "placeholder", fields) for text in found.placeholders]
    inputs += [_explained(word, word, "program", fields) for word in found.program]
    inputs += [_explained(flag, f"{flag} {parsed.value(flag)}", "file", fields)
               for flag in parsed.flags if flag in explanations() and parsed.value(flag)]
    for patch in recipe.patches:
        stored = (catalog.root / patch).is_file()
        inputs.append(RunInput(patch, "patch", "this repository" if stored else "the recipe's author",
                               f"apply or install `{patch}` before the run" if stored else
                               f"`{patch}` is named by the recipe but not stored in this repository; "
                               "ask its author (see Citation)"))
    return inputs
