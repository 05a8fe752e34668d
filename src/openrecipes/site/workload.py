"""What a leaderboard's runs actually trained, in words, from the recipes' own fields: how many steps, from which
weights, on which rows and at what global batch. A board of short runs on demo rows at a small global batch sits
on the same pages as published runs at global batches of thousands; these words stand beside them, so nobody reads
one as the other.
"""

from __future__ import annotations

from openrecipes.catalog.model import Recipe
from openrecipes.engines.registry import engine_named


def _span(values: list[int]) -> str:
    low, high = min(values), max(values)
    return f"{low:,}" if low == high else f"{low:,}–{high:,}"


def workload_words(recipes: list[Recipe]) -> str:
    """One sentence for the runs of a board (one workload: row length, global batch and precision), e.g. "20-step
    runs from random weights on <dataset>, 8,192-token rows at global batch 16". A fact the recipes do not share is
    left out rather than guessed."""
    steps = _span([recipe.result.steps_per_run for recipe in recipes])
    words = f"{steps}-step runs"
    if all(engine_named(recipe.engine).from_random_weights(recipe.run) for recipe in recipes):
        words += " from random weights"
    datasets = {recipe.workload.dataset.name for recipe in recipes}
    if len(datasets) == 1:
        words += f" on {datasets.pop()}"
    rows = _span([recipe.workload.row_tokens for recipe in recipes])
    return words + f", {rows}-token rows at global batch {_span([recipe.workload.global_batch for recipe in recipes])}"
