"""The Plan page of each model, read from the planner's exported tables (plans/<model>.json in the catalog root,
written by `openrecipes plan export --out plans`): the site renders them and never runs the predictor.

The page answers first (per GPU type and count: the best predicted layout with its held-out range, and the best
measured recipe or run beside it), then the full tables, then the calibration.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from openrecipes.catalog.store import Catalog, CatalogEntry
from openrecipes.errors import UserError

PLANS_FOLDER = "plans"  # in the catalog root


@dataclass
class Answer:
    """One GPU type and count in the page's short answer."""
    gpu_type: str
    gpus: int
    anchor: str
    best: dict | None  # the best predicted fitting layout (None: nothing fits)
    measured_name: str | None  # the fastest measured recipe or run on this type and count
    measured_entry: CatalogEntry | None  # its recipe, where it is one
    measured_tokens: float | None


@dataclass
class ModelPlan:
    model: str
    path: str
    data: dict | None  # the exported plan (None: no export for this model)
    entries: dict[str, CatalogEntry] = field(default_factory=dict)  # measured recipes by slug, for names and links
    answers: list[Answer] = field(default_factory=list)
    downloads: dict[str, str] = field(default_factory=dict)  # site path -> a planned recipe's YAML


def plan_page_path(folder: str) -> str:
    return f"plan/{folder}.html"


def anchor(table: dict) -> str:
    return f"plan-{table['gpu_type'].lower()}-{table['gpus']}"


def read_plan(root: Path, model: str) -> dict | None:
    path = root / PLANS_FOLDER / f"{model}.json"
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except ValueError as error:
        raise UserError(f"{path}: not JSON ({error}); rewrite it with `openrecipes plan export --out plans`") from None


def _answer(table: dict, entries: dict[str, CatalogEntry]) -> Answer:
    candidates = [(row["measured"], row["slug"], entries.get(row["slug"])) for row in table["measured"]]
    candidates += [(run["measured"], run["label"], None) for run in table["runs"]]
    best_measured = max(candidates, key=lambda c: c[0], default=(None, None, None))
    rows = table["data"]["rows"]
    return Answer(table["gpu_type"], table["gpus"], anchor(table), rows[0] if rows else None, best_measured[1],
                  best_measured[2], best_measured[0])


def model_plans(catalog: Catalog, sections) -> list[ModelPlan]:
    """The Plan page of every model section that has a model card, from its exported tables."""
    by_slug = {entry.slug: entry for entry in catalog.recipes}
    plans = []
    for section in sections:
        if section.name not in catalog.tables.models:
            continue
        data = read_plan(catalog.root, section.name)
        plan = ModelPlan(section.name, plan_page_path(section.folder), data)
        if data:
            for table in data["tables"]:
                table["anchor"] = anchor(table)
                for row in table["data"]["rows"]:
                    if row.get("planned_recipe"):
                        path = f"plan/{section.folder}/{table['anchor']}-planned-{row['planned_recipe']['rank']}.yaml"
                        row["planned_recipe"]["yaml_path"] = path
                        plan.downloads[path] = row["planned_recipe"]["text"]
                plan.entries |= {row["slug"]: by_slug[row["slug"]]
                                 for row in table["measured"] if row["slug"] in by_slug}
            plan.answers = [_answer(table, plan.entries) for table in data["tables"]]
        plans.append(plan)
    return plans
