"""derived/answers/<model>.json: the planner's part of every answer the site offers for a model, precomputed.

The grid is every GPU type of hardware/gpus.yaml x the counts 1, 2, 4, ..., 1,024 and every count the model has a
measured or published figure at. Each file is sealed, as plans/*.json are, to the model's data inputs and the
planner's version (tune/fingerprint.py), and `openrecipes refresh` writes again only the stale ones.

`openrecipes refresh` computes them (answer/refresh.py). The planner is slow on large mixtures of experts (about
10 s of CPU for one count of DeepSeek-V3 at a thousand GPUs; a whole grid of gpt-oss-20b on one GPU type, both
engines, about 50 s), and every GPU type of every model would take over an hour of CPU. So predicted lines are
offered on the GPU types an answer can price whole (an instance of hardware/instances.yaml rents them), for the
models with a recipe or a published run (those plans/ holds: a catalog of one model's recipes refreshes one grid);
elsewhere the measured and published lines stand and the answer names the `plan` command that predicts the point.
The terminal answers under the same rule, so the two faces give the same lines.
"""

from __future__ import annotations

import json
from pathlib import Path

from openrecipes.answer.model import AnswerGrid, PredictedPoint
from openrecipes.catalog.paths import DERIVED
from openrecipes.catalog.store import Catalog
from openrecipes.errors import UserError
from openrecipes.textfile import MIB, read_text, shown

ANSWERS_FOLDER = DERIVED / "answers"
GRID_COUNTS = tuple(2**k for k in range(11))  # 1 to 1,024
MAX_GRID_BYTES = 64 * MIB


def grid_counts(catalog: Catalog, model: str, gpu_type: str) -> list[int]:
    """The counts the site answers for on a GPU type: the powers of two to 1,024 and every count of a figure."""
    figures = {e.entry.gpu.count for e in (*catalog.entries, *catalog.record)
               if (e.entry.model, e.entry.gpu.type) == (model, gpu_type)}
    return sorted(set(GRID_COUNTS) | figures)


def priced_types(catalog: Catalog) -> list[str]:
    """The GPU types an instance of hardware/instances.yaml rents, in hardware/gpus.yaml's order."""
    rented = {row.gpu for row in catalog.tables.instances.values()}
    return [gpu_type for gpu_type in catalog.tables.gpus if gpu_type in rented]


def predicted_models(catalog: Catalog) -> list[str]:
    """The models with a card and a recipe or a published run (the ones plans/ holds): each gets a grid. A grid of
    every model's card would recompute all of them whenever the held-out table moves (a contributor's one recipe)."""
    with_runs = {e.entry.model for e in catalog.recipes} | {e.entry.model for e in catalog.record
                                                             if e.entry.published is not None}
    return sorted(with_runs & set(catalog.tables.models))


def predicted_here(catalog: Catalog, model: str, gpu_type: str, gpus: int) -> str | None:
    """Why the planner's lines are not offered at this point; None where they are (a priced GPU type, a model with a
    recipe or a published run)."""
    ask = f"ask `openrecipes plan {model} --gpu {gpu_type} --gpus {gpus}`"
    if model not in predicted_models(catalog):
        return f"predicted: offered for the models with a recipe or a published run, as their Plan pages; {ask}"
    priced = priced_types(catalog)
    if gpu_type in priced:
        return None
    return (f"predicted: offered on the GPU types an instance of hardware/instances.yaml prices ({', '.join(priced)})"
            f"; for {gpu_type} {ask}")


def grid_text(grid: AnswerGrid) -> str:
    return json.dumps(grid.model_dump(mode="json"), indent=0, separators=(",", ":")) + "\n"


def read_grid(path: Path) -> AnswerGrid:
    """A grid file, checked against its typed model (a file that is not one is a one-line error)."""
    try:
        return AnswerGrid.model_validate_json(read_text(path, MAX_GRID_BYTES, "answer grid"))
    except ValueError as error:
        raise UserError(f"{shown(path)}: not an answer grid ({str(error).splitlines()[0]}); run `openrecipes "
                        "refresh`") from None


def read_grids(folder: Path) -> dict[str, AnswerGrid]:
    """Every model's grid in the folder, by model; a missing folder holds none."""
    grids = [read_grid(path) for path in sorted(folder.glob("*.json"))] if folder.is_dir() else []
    return {grid.model: grid for grid in grids}


def point_of(grid: AnswerGrid | None, gpu_type: str, gpus: int) -> PredictedPoint | None:
    return next((p for p in grid.points if (p.gpu_type, p.gpus) == (gpu_type, gpus)), None) if grid else None

