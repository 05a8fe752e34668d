"""Data for the compare page: one small script per recipe, loaded only when the reader picks that recipe.

A page holding every recipe's data would outgrow the 150 KB page budget at a thousand recipes; a script per
recipe also loads from file://, where fetch() of a JSON file is refused. Each script only hands JSON data to
site.js, which writes it into the page with textContent.
"""

from __future__ import annotations

import json
from functools import lru_cache

from openrecipes import figures
from openrecipes.audit.noise import noise_band_percent
from openrecipes.catalog.command import CommandError
from openrecipes.catalog.entry_figures import published_of
from openrecipes.catalog.model import Recipe
from openrecipes.catalog.store import RecipeEntry
from openrecipes.site import format as fmt
from openrecipes.site.before_run import parsed_run
from openrecipes.site.pages import BoardPage, recipe_page_path
from openrecipes.verify.config import load_rules

_rules = lru_cache(maxsize=1)(load_rules)  # the configuration check's argument classes (rules/argument-classes.yaml)


def _arguments(run: str) -> tuple[dict[str, str], dict[str, str]]:
    """The launch flags and exports of a run script, each value as written ("on" for a switch)."""
    try:
        parsed = parsed_run(run)
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


# How a difference of a figure is written, by its unit: "$0.0012", "1.5 points" (of a percentage), "0.25 h".
_AFFIXES = {"$": {"prefix": "$"}, "%": {"suffix": " points"}, "fraction": {"suffix": " points"}, "h": {"suffix": " h"}}


def _figure(figure: figures.FigureSpec, recipe: Recipe, usd_value: float, token_budget: int,
            noise: float | None) -> dict:
    """One figure the compare page subtracts: its value, its text, the direction that is better and how a
    difference is written. $ per 1M tokens is its full-precision value; a fraction (MFU) is in percent."""
    value = usd_value if figure.ranked_unrounded else published_of(figure, recipe, token_budget)
    if figure.unit == "fraction" and value is not None:
        value = round(value * 100, 2)
    decimals = figure.decimals if figure.difference_decimals is None else figure.difference_decimals
    return {"label": fmt.figure_label(figure, token_budget), "value": value,
            "text": fmt.figure_text(figure, recipe, token_budget), "better": figure.better, "decimals": decimals,
            **_AFFIXES.get(figure.unit, {}), **({"noise_percent": noise} if figure.within_noise else {})}


def _figures(recipe: Recipe, usd_value: float, token_budget: int) -> list[dict]:
    """The figures the compare page subtracts, then the GPU count. Speed and what is worked out from it carry the
    recipe's noise band: a difference inside it is "within noise", not a win."""
    cv = recipe.result.step_time_cv_percent  # every ranked recipe was measured
    noise = noise_band_percent(cv) if cv is not None else None
    return [*(_figure(f, recipe, usd_value, token_budget, noise) for f in figures.shown_on("compare")),
            {"label": "GPUs", "value": recipe.gpu.count, "text": str(recipe.gpu.count), "better": 0, "decimals": 0}]


def compare_record(entry: RecipeEntry, board_page: BoardPage, rank: int, usd_value: float, evidence: str,
                   token_budget: int = figures.DEFAULT_TOKEN_BUDGET) -> dict:
    recipe = entry.entry
    compared = {fmt.figure_label(f, token_budget) for f in figures.shown_on("compare")}
    flags, exports = _arguments(recipe.run)
    facts = [("Model", recipe.model), ("Board", f"#{rank} on {board_page.title}"),
             ("Workload", fmt.workload(recipe)), ("Layout label", recipe.layout.label),
             ("Highlights", recipe.layout.highlights), ("Author", recipe.author.name)]
    facts += [(label, value) for label, value in fmt.recipe_facts(recipe, token_budget=token_budget)
              if label not in compared]
    facts += [(f"Stack: {name}", value) for name, value in fmt.stack_items(recipe)]
    return {
        "slug": entry.slug,
        "name": entry.name,
        "page": recipe_page_path(entry),
        "path": entry.path.as_posix(),
        "model": recipe.model,
        "gpu_type": recipe.gpu.type,
        "board": board_page.title,
        "board_page": board_page.path,
        "rank": rank,
        "evidence": evidence,
        "workload": board_page.board.workload.label,
        "figures": _figures(recipe, usd_value, token_budget),
        "facts": facts,
        "arguments": {**flags, **{f"{name} (env)": value for name, value in exports.items()}},
        "classes": _classes(flags, exports),
    }


def picker_script(groups: list[tuple[str, list[tuple[str, str]]]]) -> bytes:
    """The compare page's recipe list, one group per board: (label, [(slug, option text)]), for site.js to fill
    both pickers with (as text): a page listing every recipe would grow with the catalog."""
    payload = json.dumps([{"label": label, "options": options} for label, options in groups], ensure_ascii=True,
                         separators=(",", ":")).replace("<", "\\u003c")
    return f"window.openrecipesCompareIndex = {payload};\n".encode("ascii")


def compare_script(record: dict) -> bytes:
    # ensure_ascii also escapes U+2028/2029; "<" is escaped so no "</script>" can appear even if inlined one day.
    payload = json.dumps(record, ensure_ascii=True, separators=(",", ":")).replace("<", "\\u003c")
    return f"window.openrecipesCompare.receive({payload});\n".encode("ascii")
