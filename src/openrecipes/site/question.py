"""The home page's question, "model M on N x GPU G (in precision P)?", answered in the reader's browser from one
small data script written at build time: every measured recipe, every published entry and every size the planner
exported, each with its evidence level. site.js picks the answer in that order (measured recipes first, then
published entries, then the planner) and writes it with textContent; nothing runs on a server.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from openrecipes.plan.words import describe
from openrecipes.site.pages import Site, recipe_page_path, recipe_yaml_path
from openrecipes.site.plan import ModelPlan, precision_family, prediction_precision
from openrecipes.site.record import record_row_path

ANSWERS_PATH = "answers.js"
# The order the page answers in: what we measured, then what others published, then what the planner predicts.
SOURCES = ("recipe", "published", "plan")


@dataclass(frozen=True)
class Known:
    """One figure the question can be answered with."""
    model: str
    gpu_type: str
    gpus: int
    precision: str  # its family, upper case: BF16, FP8, MXFP8, NVFP4
    source: str  # one of SOURCES
    evidence: str  # re-derived, author-reported, failed, audited or predicted
    tokens: float  # tokens/s per GPU
    low: float | None  # a prediction's likely range
    high: float | None
    name: str  # the recipe, entry or predicted layout
    href: str  # its page, relative to the site root


def known_figures(site: Site, plans: list[ModelPlan]) -> list[Known]:
    """Every figure of every model, measured, published or predicted."""
    known = []
    for entry in site.catalog.recipes:
        recipe = entry.entry
        known.append(Known(recipe.model, recipe.gpu.type, recipe.gpu.count, precision_family(recipe.workload.precision),
                           "recipe", site.evidence(entry), recipe.result.tokens_per_s_per_gpu, None, None, entry.name,
                           recipe_page_path(entry)))
    for summary in site.catalog.summaries:
        known.append(Known(summary.entry.model, summary.entry.gpu.type, summary.entry.gpu.count, "BF16", "published",
                           site.evidence(summary), summary.entry.result.tokens_per_s_per_gpu, None, None,
                           f"{summary.entry.gpu.type} published summary", recipe_yaml_path(summary)))
    for row in (row for section in site.sections for rows in section.record.values() for row in rows):
        published = row.entry.entry
        known.append(Known(published.model, published.gpu.type, published.gpu.count,
                           precision_family(row.run.precision), "published", site.evidence(row.entry),
                           published.result.tokens_per_s_per_gpu, None, None, row.entry.name, record_row_path(row)))
    for plan in plans:
        for view in plan.tables:
            if not view.table.data.rows:
                continue
            best = view.table.data.rows[0]
            known.append(Known(plan.model, view.table.gpu_type, view.table.gpus, prediction_precision(best), "plan",
                               "predicted", best.tokens_per_s_per_gpu, best.interval.low, best.interval.high,
                               describe(best), f"{plan.path}#{view.anchor}"))
    return known


def answers_script(site: Site, plans: list[ModelPlan]) -> bytes:
    """The data script: every model (card-only ones too, so each gets an answer) and every known figure."""
    data = {"models": [section.name for section in site.sections],
            "plans": {plan.model: plan.path for plan in plans},
            "known": [asdict(known) for known in known_figures(site, plans)]}
    payload = json.dumps(data, ensure_ascii=True, separators=(",", ":")).replace("<", "\\u003c")
    return f"window.openrecipesAnswers = {payload};\n".encode("ascii")
