"""Data for the compare page: one small script per recipe, loaded only when the reader picks that recipe.

A page holding every recipe's data would outgrow the 150 KB page budget at a thousand recipes; a script per
recipe also loads from file://, where fetch() of a JSON file is refused. Each script only hands JSON data to
site.js, which writes it into the page with textContent.
"""

from __future__ import annotations

import json
from functools import lru_cache

from openrecipes.audit.noise import noise_band_percent
from openrecipes.catalog.command import CommandError
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


# The figures the compare page subtracts, each with the direction that is better (+1: higher is better). Speed and
# the cost worked out from it carry the recipe's noise band: a difference inside it is "within noise", not a win.
def _figures(recipe, usd_value: float) -> list[dict]:
    result = recipe.result
    noise = noise_band_percent(result.step_time_cv_percent)
    return [
        {"label": "Tokens/s per GPU", "value": result.tokens_per_s_per_gpu, "text": fmt.tokens_detail(
            result.tokens_per_s_per_gpu), "better": 1, "decimals": 2, "noise_percent": noise},
        {"label": "$ / 1M tokens", "value": usd_value, "text": fmt.usd(result.usd_per_million_tokens), "better": -1,
         "decimals": 4, "prefix": "$", "noise_percent": noise},
        {"label": "MFU", "value": round(result.mfu * 100, 2), "text": f"{result.mfu * 100:.1f}%", "better": 1,
         "decimals": 1, "suffix": " points"},
        {"label": "Step-time CV", "value": result.step_time_cv_percent, "text": f"{result.step_time_cv_percent}%",
         "better": -1, "decimals": 2, "suffix": " points"},
        {"label": "GPUs", "value": recipe.gpu.count, "text": str(recipe.gpu.count), "better": 0, "decimals": 0},
    ]


def compare_record(entry: RecipeEntry, board_page: BoardPage, rank: int, usd_value: float, evidence: str) -> dict:
    recipe = entry.entry
    flags, exports = _arguments(recipe.run)
    facts = [("Model", recipe.model), ("Board", f"#{rank} on {board_page.title}"),
             ("Workload", fmt.workload(recipe)), ("Layout label", recipe.layout.label),
             ("Highlights", recipe.layout.highlights), ("Author", recipe.author.name)]
    facts += [(label, value) for label, value in fmt.recipe_facts(recipe)
              if label not in ("Tokens/s per GPU", "$ / 1M tokens", "MFU", "Step-time CV")]
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
        "figures": _figures(recipe, usd_value),
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
