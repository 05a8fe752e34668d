"""A candidate as a recipe: the base recipe's data with the candidate's layout, its run re-rendered."""

from __future__ import annotations

import copy
from dataclasses import dataclass

from openrecipes.catalog.command import parse_run
from openrecipes.catalog.model import Recipe
from openrecipes.engines.torchtitan.render import compose, render
from openrecipes.plan.calibrate import NO_RESHARD
from openrecipes.tune.candidates import SELECTIVE_AC_METHOD, Candidate


def candidate_data(base: dict, candidate: Candidate, steps: int) -> dict:
    """The base recipe's data with the candidate's layout fields and `steps`; `run` is re-rendered separately."""
    lay = candidate.layout
    data = copy.deepcopy(base)
    recompute = None if lay.recompute == "none" else {
        "granularity": lay.recompute, "method": SELECTIVE_AC_METHOD if lay.recompute == "selective" else None,
        "num_layers": None}
    reshard = ("" if lay.dp == 1 else
               "; reshard after forward" if lay.reshard_after_forward else "; no reshard after forward")
    data["layout"].update(
        label=candidate.label, summary=f"{lay.label}; {lay.rows_per_microbatch} row(s) of "
        f"{data['workload']['row_tokens']:,} tokens a microbatch; recompute {lay.recompute}; "
        f"{'torch.compile' if lay.compile else 'eager'}"
        f"{reshard}"
        " (chosen by `openrecipes tune`)",
        highlights=f"tuned: {candidate.label}", tp=lay.tp, pp=lay.pp, vpp=1, cp=lay.cp, ep=lay.ep, etp=lay.etp,
        dp=lay.dp, fsdp=lay.dp, sequence_parallel=lay.tp > 1, layer_split=None,
        max_tokens_per_gpu=lay.max_tokens_per_gpu, rows_per_microbatch=lay.rows_per_microbatch, recompute=recompute,
        offload=None, compile=lay.compile)
    data["result"]["steps_per_run"] = steps
    return data


def rendered_run(data: dict, base: Recipe, card, reshard_after_forward: bool) -> str:
    """`run` for a recipe whose fields differ from the base: its fields' flags over the base command's others."""
    launch = compose(Recipe.model_validate(data), card, parse_run(base.run))
    flag, value = NO_RESHARD
    launch.flags.pop(flag, None)  # the base's choice; the candidate's own follows
    if not reshard_after_forward:
        launch.flags[flag] = [value]
    return launch.script()


@dataclass
class Arm:
    """One runnable arm: its recipe data, the typed recipe and its layout's candidate."""
    name: str
    data: dict
    recipe: Recipe
    candidate: Candidate


def arm_of(name: str, base_data: dict, base: Recipe, card, candidate: Candidate, steps: int) -> Arm:
    data = candidate_data(base_data, candidate, steps)
    data["run"] = rendered_run(data, base, card, candidate.layout.reshard_after_forward)
    return Arm(name, data, Recipe.model_validate(data), candidate)


def reference_arm(base_data: dict, base: Recipe, card, candidate: Candidate, steps: int) -> Arm:
    """The base recipe's own configuration at `steps` steps: only --training.steps changes."""
    data = copy.deepcopy(base_data)
    data["result"]["steps_per_run"] = steps
    data["run"] = render(base, card, parse_run(base.run), steps=steps).script()
    return Arm("reference", data, Recipe.model_validate(data), candidate)
