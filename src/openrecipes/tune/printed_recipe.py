"""A planned layout of an engine whose recipes are printed, not run here (slime/Megatron, the seeds'): the base
recipe's layout fields set from the plan and its command written by the engine's runner (its flags rewritten
from them through the engine's flag table)."""

from __future__ import annotations

from openrecipes.catalog.command import parse_run
from openrecipes.catalog.hardware import ModelCard
from openrecipes.catalog.model import LayerSplit, Offload, Recipe, Recompute
from openrecipes.engines.registry import engine_named
from openrecipes.plan.layouts import Layout
from openrecipes.plan.words import describe

# Megatron's full recompute as the seeds run it: every layer, one at a time.
FULL_RECOMPUTE = Recompute(granularity="full", method="uniform", num_layers=1)


def expressible(layout: Layout, layers: int) -> bool:
    """What the flag table can say: virtual stages only over an even split (an uneven one with VP needs
    --pipeline-model-parallel-layout, which no recipe field carries)."""
    return layout.vpp == 1 or (len(set(layout.stage_layers)) == 1 and layers % (layout.pp * layout.vpp) == 0)


def printed_recipe(base: Recipe, card: ModelCard, layout: Layout, rank: int) -> Recipe:
    """`base` with the planned layout's fields and its command rewritten; not yet revalidated."""
    split = layout.stage_layers
    recompute = {"none": None, "selective": Recompute(granularity="selective", method=None, num_layers=None),
                 "full": FULL_RECOMPUTE}
    fields = base.layout.model_copy(update=dict(
        label=layout.label, summary=f"{describe(layout)} (#{rank} predicted by `openrecipes plan`)",
        highlights=f"planned: {describe(layout)}", tp=layout.tp, pp=layout.pp, vpp=layout.vpp, cp=layout.cp,
        ep=layout.ep, etp=layout.etp, dp=layout.dp, fsdp=None, sequence_parallel=layout.sequence_parallel,
        layer_split=None if len(set(split)) == 1 else LayerSplit(first=split[0], last=split[-1]),
        max_tokens_per_gpu=layout.max_tokens_per_gpu, rows_per_microbatch=layout.rows_per_microbatch,
        recompute=recompute[layout.recompute],
        offload=Offload(optimizer_fraction=layout.levers.offload_fraction, overlap_d2h_h2d=True)
        if layout.levers.offload_fraction else None))
    recipe = base.model_copy(update={"layout": fields})
    runner = engine_named(layout.engine).runner
    run = runner.planned_run(recipe, card, base, parse_run(base.run), layout.levers)
    return recipe.model_copy(update={"run": run})
