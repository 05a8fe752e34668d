"""A planner layout with some fields changed, degrees and levers alike: the levers go into its engine's block."""

from __future__ import annotations

from dataclasses import replace

from openrecipes.engines.levers import UNPULLED, lever_values
from openrecipes.engines.registry import engine_named
from openrecipes.plan.layouts import Layout


def relaid(layout: Layout, **fields) -> Layout:
    levers = {name: value for name, value in fields.items() if name in UNPULLED}
    degrees = {name: value for name, value in fields.items() if name not in UNPULLED}
    pulled = lever_values(layout.levers) | levers
    return replace(layout, **degrees, levers=engine_named(layout.engine).levers_of(**pulled))


def built(engine: str, tp: int, pp: int, vpp: int, cp: int, ep: int, etp: int, dp: int, stage_layers: tuple,
          recompute: str, rows_per_microbatch: int, max_tokens_per_gpu: int, **levers) -> Layout:
    """A layout from its degrees and the levers it pulls."""
    return Layout(engine, tp, pp, vpp, cp, ep, etp, dp, stage_layers, recompute, rows_per_microbatch,
                  max_tokens_per_gpu, engine_named(engine).levers_of(**levers))
