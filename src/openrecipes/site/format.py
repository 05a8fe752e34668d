"""How the site writes each figure: the catalog's recipe facts (catalog/facts.py) and the planner's tables."""

from __future__ import annotations

# The templates and page builders reach the catalog's recipe facts through `fmt`.
from openrecipes.catalog.facts import (
    component_tests,
    convergence,
    figure_label,
    figure_text,
    gpus,
    measured,
    mfu,
    recipe_facts,
    rows,
    stack_items,
    tokens_board,
    tokens_count,
    tokens_detail,
    usd,
    usd_ranked,
    workload,
)
from openrecipes.figures import duration_text as duration
from openrecipes.figures import usd_total_text as usd_total
from openrecipes.plan.export_model import PredictedLayout

__all__ = ["component_tests", "convergence", "duration", "figure_label", "figure_text", "gpus", "measured",
           "memory_parts", "mfu", "recipe_facts", "rows", "stack_items", "tokens_board", "tokens_count",
           "tokens_detail", "usd", "usd_ranked", "usd_total", "workload"]


def memory_parts(prediction: PredictedLayout) -> str:
    """A planner object's predicted memory by part, as its tooltip: "weights 23.3 · gradients 46.5 · … GiB"."""
    parts = [f"{name.replace('_', ' ')} {gib:.1f}" for name, gib in prediction.memory_parts.items() if gib]
    return " · ".join(parts) + " GiB"
