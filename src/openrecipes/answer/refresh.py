"""`openrecipes refresh`'s answers step: each model's grid (answer/grid.py) computed again where its seal moved,
with a progress line per model; a model's points are spread over the machine's cores."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from pathlib import Path

from openrecipes.answer.grid import grid_counts, grid_text, predicted_models, priced_types, read_grid
from openrecipes.answer.model import AnswerGrid, PredictedPoint
from openrecipes.answer.predicted import predicted_point
from openrecipes.atomic import write_atomic
from openrecipes.catalog.store import Catalog
from openrecipes.errors import UserError
from openrecipes.forked import forked_map

ANSWER_VERSION = 3  # bumped when what a grid holds changes without a change of its inputs or PLANNER_VERSION


def compute_grid(catalog: Catalog, model: str, inputs: str,
                 progress: Callable[[str], None] = lambda text: None) -> AnswerGrid:
    """Every point of the model's grid where predictions are offered, sealed to `inputs` (its plan seal); the points
    are independent, so they are spread over the machine's cores."""
    asked = [(gpu_type, gpus) for gpu_type in priced_types(catalog) for gpus in grid_counts(catalog, model, gpu_type)]
    started = time.monotonic()
    points = forked_map(lambda point: predicted_point(catalog, model, *point), asked, minimum=2)
    progress(f"{model}: {len(points)} points in {time.monotonic() - started:.1f} s")
    return AnswerGrid(fingerprint=inputs, model=model, points=tuple(points))


def grid_inputs(catalog: Catalog) -> dict[str, str]:
    """Each model's grid seal: its plan seal (its card, entries and record, the hardware and prices, the planner's
    version and data, tune/fingerprint.py) with this file's version."""
    from openrecipes.tune.fingerprint import plan_inputs

    models = predicted_models(catalog)
    return {model: hashlib.sha256(f"{ANSWER_VERSION}\0{inputs}".encode()).hexdigest()
            for model, inputs in plan_inputs(catalog).items() if model in models}


def sampled_points(grids: dict[str, AnswerGrid], count: int) -> list[tuple[str, PredictedPoint]]:
    """`count` points of the current grids, the same for the same grids and another choice when a seal moves."""
    points = [(model, point) for model, grid in grids.items() for point in grid.points]
    return sorted(points, key=lambda item: hashlib.sha256(
        f"{grids[item[0]].fingerprint}\0{item[0]}\0{item[1].gpu_type}\0{item[1].gpus}".encode()).hexdigest())[:count]


def differing_points(catalog: Catalog, grids: dict[str, AnswerGrid], count: int,
                     say: Callable[[str], None]) -> list[str]:
    """Each sampled point whose stored lines are not what the planner computes now (a formula changed without a
    PLANNER_VERSION bump, or a grid edited with its seal kept)."""
    differ = []
    for model, point in sampled_points(grids, count):
        started = time.process_time()
        same = predicted_point(catalog, model, point.gpu_type, point.gpus) == point
        say(f"{model} on {point.gpus:,} x {point.gpu_type} computed again and compared: "
            f"{'the same' if same else 'differs'} ({time.process_time() - started:.1f} s of CPU)")
        if not same:
            differ.append(model)
    return differ


def refresh_grids(catalog: Catalog, folder: Path, check: bool, say: Callable[[str], None],
                  sample: int = 0) -> str | None:
    """Write every stale grid (or, with `check`, write nothing and compute `sample` points of the current grids
    again to compare); why any was stale, or None."""
    seals = grid_inputs(catalog)
    held = {path.stem: path for path in folder.glob("*.json")} if folder.is_dir() else {}
    why: dict[str, list[str]] = {}
    for model in sorted(set(seals) | set(held)):
        if model not in held:
            why.setdefault("missing", []).append(model)
        elif model not in seals:
            why.setdefault("its model has no card, recipe or published run", []).append(model)
        else:
            try:
                current = read_grid(held[model]).fingerprint == seals[model]
            except UserError:
                current = False
            if not current:
                why.setdefault("its inputs or the planner's version changed", []).append(model)
    stale = sorted({model for models in why.values() for model in models} & set(seals))
    say(f"{len(stale)} of {len(seals)} answer grids stale; the others' inputs are unchanged")
    if check:
        current_grids = {model: read_grid(held[model]) for model in sorted(set(seals) - set(stale))}
        for model in differing_points(catalog, current_grids, sample, say):
            why.setdefault("its contents differ from what the planner computes from its inputs: a code change "
                           "that changes an answer bumps PLANNER_VERSION", []).append(model)
    else:
        for model in set(held) - set(seals):
            held[model].unlink()
        folder.mkdir(parents=True, exist_ok=True)
        for number, model in enumerate(stale, 1):
            grid = compute_grid(catalog, model, seals[model], say)
            write_atomic(folder / f"{model}.json", grid_text(grid))
            say(f"[{number}/{len(stale)}] {model}.json written")
    return "; ".join(f"{', '.join(f'{m}.json' for m in models)} ({problem})" for problem, models in why.items()) \
        or None
