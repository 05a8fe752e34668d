"""A catalog entry's figures: what figures.py works them out from, and each figure's value as the pages show it.

A stored figure is the entry's `result:` field as published (a figure that ranks unrounded, at full precision where
that rounds to the published one); a computed figure (time to train) is worked out from the entry's inputs.
"""

from __future__ import annotations

from openrecipes import figures
from openrecipes.catalog.hardware import ReferenceTables
from openrecipes.catalog.model import PublishedSummary, Recipe


def inputs_of(entry: Recipe | PublishedSummary, tables: ReferenceTables | None,
              token_budget: int = figures.DEFAULT_TOKEN_BUDGET) -> figures.Inputs:
    """The entry's stored tokens/s per GPU and GPU count; a recipe's active parameters, its variant's dense BF16
    peak and its instance's price where the tables (if given) know them (a published summary names no instance)."""
    if tables is None or not isinstance(entry, Recipe):
        return figures.Inputs(tokens_per_s_per_gpu=entry.result.tokens_per_s_per_gpu, gpus=entry.gpu.count,
                              token_budget=token_budget)
    gpu = tables.variants.get(entry.gpu.variant)
    instance = tables.instances.get(entry.gpu.instance)
    return figures.Inputs(
        tokens_per_s_per_gpu=entry.result.tokens_per_s_per_gpu, gpus=entry.gpu.count,
        active_params=entry.result.active_params.count, peak_flops_per_gpu=gpu.peak_bf16_flops if gpu else None,
        usd_per_gpu_hour=figures.usd_per_gpu_hour(instance.usd_per_hour, instance.gpus) if instance else None,
        token_budget=token_budget)


def value_of(figure: figures.FigureSpec, entry: Recipe | PublishedSummary, tables: ReferenceTables | None,
             token_budget: int = figures.DEFAULT_TOKEN_BUDGET) -> float | None:
    """The figure as pages rank it: a stored one as published (None where the entry publishes none; at full precision
    where it ranks unrounded and the tables price it), a computed one worked out from the entry's inputs."""
    inputs = inputs_of(entry, tables, token_budget)
    if not figure.stored:
        return figure.of(inputs)
    published = getattr(entry.result, figure.name, None)
    if published is None or not figure.ranked_unrounded:
        return published
    return figure.unrounded(published, inputs)


def published_of(figure: figures.FigureSpec, entry: Recipe | PublishedSummary,
                 token_budget: int = figures.DEFAULT_TOKEN_BUDGET) -> float | None:
    """The figure as written: a stored one as the entry publishes it, a computed one worked out from its stored
    tokens/s per GPU and GPU count, rounded to its decimals."""
    if figure.stored:
        return getattr(entry.result, figure.name, None)
    return figure.published(inputs_of(entry, None, token_budget))
