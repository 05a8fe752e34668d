"""The planner's part of an answer at one GPU type and count: its best runnable layout on every engine that runs the
model, and why an engine offers none (no engine model in the card, does not fit, no recipe to compose one from).

Where the model's weights and gradients cannot fit even fully sharded, the answer says so at once from that lower
bound, naming the smallest count that could hold them, without enumerating layouts.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from openrecipes.answer.model import PredictedLine, PredictedPoint
from openrecipes.catalog.hardware import ModelCard
from openrecipes.catalog.store import Catalog
from openrecipes.engines.knowledge import Engine
from openrecipes.engines.registry import ENGINES
from openrecipes.errors import UserError
from openrecipes.plan.answer import default_workload, published_figures, widened
from openrecipes.plan.constants import GIB
from openrecipes.plan.levers import parse_levers
from openrecipes.plan.predict import PlanRequest, context
from openrecipes.plan.words import short_label

# What stays on the GPUs however far a layout shards and offloads: BF16 weights and (at the least) BF16 gradients.
STATE_BYTES_PER_PARAM = 4
LARGEST_COUNT = 2**13  # the planner's limit (plan/cli.py MAX_GPUS)


def engines_for(card: ModelCard) -> tuple[list[Engine], list[str]]:
    """The engines that can run the model: each one whose model the card names where the engine needs one."""
    running, reasons = [], []
    for engine in ENGINES:
        keys = list(engine.model_flags.values())
        if not keys or all(card.architecture.get(key) for key in keys):
            running.append(engine)
        else:
            reasons.append(f"{engine.name}: no {engine.name} model named in the card of {card.name} "
                           f"(models/*.yaml {', '.join(keys)})")
    return running, reasons


def request_for(catalog: Catalog, model: str, gpu_type: str, gpus: int, engine: str) -> PlanRequest:
    """The request `openrecipes plan MODEL --gpu G --gpus N --engine E` makes with every other option left out."""
    workload = default_workload(catalog, model)
    levers, search = parse_levers(None, None, None)
    return PlanRequest(model, gpu_type, gpus, workload.row_tokens, workload.global_batch, engine, **levers,
                       search=search)


def states_do_not_fit(card: ModelCard, request: PlanRequest) -> str | None:
    """Why no layout can fit, from the weights and gradients alone fully sharded; None where they could."""
    if card.total_params is None:
        return None
    ctx = context(request)
    room = ctx.links.capacity_gib - ctx.calibration.runtime_reserve_gib
    states = card.total_params * STATE_BYTES_PER_PARAM / GIB
    if states / request.gpus <= room:
        return None
    could = next((n for n in (2**k for k in range(14)) if states / n <= room), None)
    smallest = f"the smallest count that could hold them is {could:,}" if could else (
        f"no count up to {LARGEST_COUNT:,} could hold them")
    per_gpu = states / request.gpus
    return (f"does not fit: its weights and gradients alone ({states:,.0f} GiB in BF16) need {per_gpu:,.1f} GiB per GPU"
            f" even fully sharded over {request.gpus:,}, above the {room:,.1f} GiB a {ctx.links.variant} "
            f"leaves; {smallest}")


@cache
def _composable(root: Path, model: str, engine: str, gpu_type: str) -> str | None:
    """Why `plan emit` cannot compose a recipe of the model under the engine (it takes its stack from one of the
    catalog's recipes); None where it can."""
    from openrecipes.tune.emit import emit_base

    try:
        emit_base(model, gpu_type, 1, root, engine)
    except UserError:
        return f"no {engine} recipe of {model} in the catalog for `plan emit` to compose one from"
    return None


def predicted_point(catalog: Catalog, model: str, gpu_type: str, gpus: int) -> PredictedPoint:
    """The planner's best runnable layout on each engine that runs the model at this point, fastest first."""
    from openrecipes.tune.emit import runnable_predictions

    card = catalog.tables.models[model]
    engines, reasons = engines_for(card)
    if not engines:
        return PredictedPoint(gpu_type=gpu_type, gpus=gpus, lines=(), not_offered=("no engine runs it", *reasons))
    try:
        too_large = states_do_not_fit(card, request_for(catalog, model, gpu_type, gpus, engines[0].name))
    except UserError as error:  # not whole nodes
        return PredictedPoint(gpu_type=gpu_type, gpus=gpus, lines=(), not_offered=(f"predicted: {error}",))
    if too_large:
        return PredictedPoint(gpu_type=gpu_type, gpus=gpus, lines=(), not_offered=(too_large,))
    lines = []
    for engine in engines:
        request = request_for(catalog, model, gpu_type, gpus, engine.name)
        try:
            runnable = runnable_predictions(request, catalog.root)
        except UserError as error:
            reasons.append(f"{engine.name}: {error}")
            continue
        if not runnable:
            reasons.append(f"{engine.name}: does not fit: no layout a recipe can run fits {gpus:,} x {gpu_type} "
                           f"with {request.row_tokens:,}-token rows and global batch {request.global_batch:,}")
            continue
        best = runnable[0]
        label = short_label(best.layout)
        cannot = _composable(catalog.root, model, engine.name, gpu_type)
        get = (f"openrecipes plan emit {model} --gpu {gpu_type} --gpus {gpus} --engine {engine.name} --rank 1 "
               f"--out {model}-{gpus}x{gpu_type.lower()}-{engine.name}.yaml" if cannot is None else
               f"{cannot}; `openrecipes plan {model} --gpu {gpu_type} --gpus {gpus} --engine {engine.name} "
               f"--layout \"{label}\"` predicts this layout")
        # the range `plan` prints: widened to hold a published figure of this model on these GPUs that disagrees
        interval = widened(best.interval, best.tokens_per_s_per_gpu, published_figures(catalog, request, runnable))
        lines.append(PredictedLine(
            engine=engine.name, layout=f"{label}, {request.row_tokens:,}-token rows, global batch "
                                       f"{request.global_batch:,}",
            tokens_per_s_per_gpu=round(best.tokens_per_s_per_gpu, 1), low=interval.low, high=interval.high, get=get))
    lines.sort(key=lambda line: -line.tokens_per_s_per_gpu)
    return PredictedPoint(gpu_type=gpu_type, gpus=gpus, lines=tuple(lines), not_offered=tuple(reasons))
