"""A candidate as a recipe: the base recipe's data with the candidate's layout, its run re-rendered."""

from __future__ import annotations

import copy
from dataclasses import dataclass

from openrecipes.catalog.command import parse_run
from openrecipes.catalog.model import Recipe
from openrecipes.engines.torchtitan.render import LEVER_FLAGS, compose, render
from openrecipes.plan.calibrate import NO_RESHARD
from openrecipes.plan.layouts import Layout
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
        f"{_levers_text(lay)} (chosen by `openrecipes tune`)",
        highlights=f"tuned: {candidate.label}", tp=lay.tp, pp=lay.pp, vpp=1, cp=lay.cp, ep=lay.ep, etp=lay.etp,
        dp=lay.dp, fsdp=lay.dp, sequence_parallel=lay.tp > 1, layer_split=None,
        max_tokens_per_gpu=lay.max_tokens_per_gpu, rows_per_microbatch=lay.rows_per_microbatch, recompute=recompute,
        offload=None, compile=lay.compile, kernels=list(lay.kernels), attention=lay.attention,
        float8=float8_field(lay))
    if lay.float8:
        data["workload"]["precision"] = "fp8"
    data["result"]["steps_per_run"] = steps
    return data


def float8_field(layout: Layout) -> dict | None:
    """The recipe's layout.float8 for a float8 scaling: the linear layers in FP8 except the output projection (kept
    in BF16, as torchtitan's float8 documentation runs it); with tensorwise scaling and FSDP sharding, the weights
    are all-gathered in FP8 and their scales computed at once (torchtitan allows both with tensorwise only)."""
    if layout.float8 is None:
        return None
    gathered = layout.float8 == "tensorwise" and layout.dp * layout.cp > 1
    return {"scaling": layout.float8, "fsdp_float8_all_gather": gathered, "precomputed_scales": gathered,
            "skip": ["output"]}


def _levers_text(layout: Layout) -> str:
    """`; Liger-Kernel ...; flex attention; FP8 linear layers (...)` for the summary, or nothing without levers."""
    parts = ([f"Liger-Kernel {', '.join(layout.kernels)}"] if layout.kernels else []) + (
        [f"{layout.attention} attention"] if layout.attention else []) + (
        [f"FP8 linear layers ({layout.float8} scaling)"] if layout.float8 else [])
    return "".join(f"; {part}" for part in parts)


def rendered_run(data: dict, base: Recipe, card, reshard_after_forward: bool) -> str:
    """`run` for a recipe whose fields differ from the base: its fields' flags over the base command's others."""
    launch = compose(Recipe.model_validate(data), card, parse_run(base.run))
    flag, value = NO_RESHARD
    launch.flags.pop(flag, None)  # the base's choice; the candidate's own follows, before the levers (which end a run)
    levers = {lever: launch.flags.pop(lever) for lever in LEVER_FLAGS if lever in launch.flags}
    if not reshard_after_forward:
        launch.flags[flag] = [value]
    launch.flags.update(levers)
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
