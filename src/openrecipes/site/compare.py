"""Data for the compare page: one small script per recipe, loaded only when the reader picks that recipe.

A page holding every recipe's data would outgrow the 150 KB page budget at a thousand recipes; a script per
recipe also loads from file://, where fetch() of a JSON file is refused. Each script only hands JSON data to
site.js, which writes it into the page with textContent.
"""

from __future__ import annotations

import json
from functools import lru_cache

from openrecipes.catalog.command import CommandError, parse_run
from openrecipes.catalog.store import CatalogEntry
from openrecipes.site import format as fmt
from openrecipes.site.pages import BoardPage, recipe_page_path
from openrecipes.verify.config import load_rules


@lru_cache(maxsize=1)
def _rules():
    """The configuration check's argument classes (rules/argument-classes.yaml)."""
    return load_rules()


def _arguments(run: str) -> tuple[dict[str, str], dict[str, str]]:
    """The launch flags and exports of a run script, each value as written ("on" for a switch)."""
    try:
        parsed = parse_run(run)
    except CommandError:
        return {}, {}  # the validator already accepted it; an unreadable script simply shows no arguments
    flags = {flag: " ".join(values) or "on" for flag, values in parsed.flags.items()}
    return flags, dict(parsed.exports)


def _classes(flags: dict[str, str], exports: dict[str, str]) -> dict[str, str]:
    """Each argument's class as the configuration check assigns it; absent when the check does not class it."""
    rules = _rules()
    found = {flag: rules.of_argument(flag) for flag in flags}
    found |= {f"{name} (env)": rules.environment.get(name) for name in exports}
    return {name: rule.klass.replace("_", " ") for name, rule in found.items() if rule is not None}


def compare_record(entry: CatalogEntry, board_page: BoardPage, rank: int) -> dict:
    recipe = entry.entry
    flags, exports = _arguments(recipe.run)
    facts = [("Model", recipe.model), ("Board", f"#{rank} on {board_page.title}"),
             ("Workload", fmt.workload(recipe)), ("Layout label", recipe.layout.label),
             ("Highlights", recipe.layout.highlights), ("Author", recipe.author.name)]
    facts += fmt.recipe_facts(recipe)
    facts += [(f"Stack: {name}", value) for name, value in fmt.stack_items(recipe)]
    return {
        "slug": entry.slug,
        "name": entry.name,
        "page": recipe_page_path(entry),
        "path": entry.path.as_posix(),
        "facts": facts,
        "arguments": {**flags, **{f"{name} (env)": value for name, value in exports.items()}},
        "classes": _classes(flags, exports),
    }


def compare_script(record: dict) -> bytes:
    # ensure_ascii also escapes U+2028/2029; "<" is escaped so no "</script>" can appear even if inlined one day.
    payload = json.dumps(record, ensure_ascii=True, separators=(",", ":")).replace("<", "\\u003c")
    return f"window.openrecipesCompare.receive({payload});\n".encode("ascii")
