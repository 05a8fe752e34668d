"""How the site writes each figure: the catalog's recipe facts (catalog/facts.py) and the planner's tables."""

from __future__ import annotations

# The templates and page builders reach the catalog's recipe facts through `fmt`.
from openrecipes.catalog.facts import (
    component_tests,
    convergence,
    gpus,
    measured,
    mfu,
    recipe_facts,
    rows,
    stack_items,
    tokens_board,
    tokens_detail,
    usd,
    usd_ranked,
    workload,
)
from openrecipes.plan.export_model import PredictedLayout

__all__ = ["component_tests", "convergence", "duration", "gpus", "measured", "memory_parts", "mfu", "recipe_facts",
           "rows", "stack_items", "tokens_board", "tokens_count", "tokens_detail", "usd", "usd_ranked", "usd_total",
           "workload"]


def duration(hours: float) -> str:
    """A wall time as a reader plans with it: minutes under an hour, hours under two days, then days."""
    if hours < 1:
        return f"{hours * 60:.0f} min"
    return f"{hours:,.1f} h" if hours < 48 else f"{hours / 24:,.1f} days"


def usd_total(usd: float) -> str:
    return f"${usd:,.0f}" if usd >= 100 else f"${usd:,.2f}"


def tokens_count(tokens: int) -> str:
    """A token budget in words: 1B, 250M, 1.5T."""
    for size, unit in ((1e12, "T"), (1e9, "B"), (1e6, "M")):
        if tokens >= size:
            return f"{tokens / size:g}{unit}"
    return f"{tokens:,}"


def memory_parts(prediction: PredictedLayout) -> str:
    """A planner object's predicted memory by part, as its tooltip: "weights 23.3 · gradients 46.5 · … GiB"."""
    parts = [f"{name.replace('_', ' ')} {gib:.1f}" for name, gib in prediction.memory_parts.items() if gib]
    return " · ".join(parts) + " GiB"
