"""A candidate as a recipe: the base recipe with the candidate's layout, its run re-rendered."""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from openrecipes.catalog.command import parse_run
from openrecipes.catalog.hardware import ModelCard
from openrecipes.catalog.model import Float8, Float8Scaling, Recipe, Recompute
from openrecipes.engines.levers import Levers
from openrecipes.engines.registry import engine_named
from openrecipes.plan.layouts import Layout
from openrecipes.tune.candidates import SELECTIVE_AC_METHOD, Candidate


def candidate_recipe(base: Recipe, candidate: Candidate, steps: int) -> Recipe:
    """The base recipe with the candidate's layout fields and `steps`, not yet revalidated: its `run` is still the
    base's (`rendered_run` composes the candidate's), and the caller checks the finished recipe once."""
    lay = candidate.layout
    recompute = None if lay.recompute == "none" else Recompute(
        granularity=lay.recompute, method=SELECTIVE_AC_METHOD if lay.recompute == "selective" else None,
        num_layers=None)
    layout = base.layout.model_copy(update=dict(
        label=lay.label, summary=f"{candidate.label} (chosen by `openrecipes tune`)",
        highlights=f"tuned: {candidate.label}", tp=lay.tp, pp=lay.pp, vpp=1, cp=lay.cp, ep=lay.ep, etp=lay.etp,
        dp=lay.dp, fsdp=lay.dp, sequence_parallel=lay.tp > 1, layer_split=None,
        max_tokens_per_gpu=lay.max_tokens_per_gpu, rows_per_microbatch=lay.rows_per_microbatch, recompute=recompute,
        offload=None, compile=lay.levers.compile, kernels=list(lay.levers.kernels), attention=lay.levers.attention,
        float8=float8_field(lay)))
    workload = base.workload.model_copy(update={"precision": "fp8"}) if lay.levers.float8 else base.workload
    return base.model_copy(update={
        "layout": layout, "workload": workload, "result": base.result.model_copy(update={"steps_per_run": steps})})


def float8_field(layout: Layout) -> Float8 | None:
    """The recipe's layout.float8 for a float8 scaling: the linear layers in FP8 except the output projection (kept
    in BF16, as torchtitan's float8 documentation runs it); with tensorwise scaling and FSDP sharding, the weights
    are all-gathered in FP8 and their scales computed at once (torchtitan allows both with tensorwise only)."""
    if layout.levers.float8 is None:
        return None
    gathered = layout.levers.float8 == "tensorwise" and layout.dp * layout.cp > 1
    # the planner's layout holds the scaling as text; Float8 checks it is one of the scalings on construction
    return Float8(scaling=cast(Float8Scaling, layout.levers.float8), fsdp_float8_all_gather=gathered,
                  precomputed_scales=gathered, skip=["output"])


def rendered_run(recipe: Recipe, base: Recipe, card: ModelCard, levers: Levers, rows_path: str | None = None) -> str:
    """`run` for a recipe whose fields differ from the base: its fields' flags over the base command's others, the
    levers no field carries as `levers` pulls them (and `rows_path` for the base's rows file, where given), as its
    engine's runner writes them."""
    return engine_named(recipe.engine).runner.planned_run(recipe, card, base, parse_run(base.run), levers, rows_path)


@dataclass
class Arm:
    """One runnable arm: its name (the folder its log is written to), its recipe and its layout's candidate."""
    name: str
    recipe: Recipe
    candidate: Candidate


def arm_of(name: str, base: Recipe, card: ModelCard, candidate: Candidate, steps: int) -> Arm:
    recipe = candidate_recipe(base, candidate, steps)
    run = rendered_run(recipe, base, card, candidate.layout.levers)
    return Arm(name, recipe.model_copy(update={"run": run}).revalidated(), candidate)


def reference_arm(base: Recipe, card: ModelCard, candidate: Candidate, steps: int) -> Arm:
    """The base recipe's own configuration at `steps` steps: only --training.steps changes."""
    run = engine_named(base.engine).runner.reference_run(base, card, parse_run(base.run), steps)
    return Arm("reference", base.model_copy(update={
        "result": base.result.model_copy(update={"steps_per_run": steps}), "run": run}).revalidated(), candidate)
