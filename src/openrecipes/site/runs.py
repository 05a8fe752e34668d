"""Loss-curve and step-time plots of recipes whose raw logs are stored under runs/ (the recipe's `runs:` block).

The logs are read by openrecipes.measure, the one log parser; the site only draws what it returns.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from openrecipes.catalog.paths import RUN_LOG
from openrecipes.catalog.store import RecipeEntry
from openrecipes.errors import UserError
from openrecipes.site import plots


@dataclass(frozen=True)
class RunImage:
    path: str  # site path of the SVG
    title: str
    svg: bytes


def _read(root: Path, folder: str):
    from openrecipes.measure.formats import read_log

    log = (root / folder / RUN_LOG).resolve()
    if not log.is_relative_to(root):
        raise UserError(f"runs folder '{folder}' lies outside the catalog {root}; name a folder under runs/")
    return read_log(log)


def run_plots(root: Path, entry: RecipeEntry) -> list[RunImage]:
    recipe = entry.entry
    if recipe.runs is None:
        return []
    arms = {"candidate": recipe.runs.candidate, "reference": recipe.runs.reference}
    tables = {arm: _read(root, folder) for arm, folder in arms.items() if folder}
    images = []
    curves = {arm: ([s.step for s in t.steps if s.loss is not None], [s.loss for s in t.steps if s.loss is not None])
              for arm, t in tables.items()}
    if any(steps for steps, _ in curves.values()):
        images.append(RunImage(f"plots/runs/{entry.slug}-loss.svg", "Loss per step, both arms",
                               plots.loss_svg(f"{entry.name}: loss per step", curves)))
    timed = [s for s in tables["candidate"].steps if s.step_time_s is not None]
    if timed:
        images.append(RunImage(f"plots/runs/{entry.slug}-step-time.svg", "Step time of the measured run",
                               plots.step_time_svg(f"{entry.name}: step time of the measured run",
                                                   [s.step for s in timed], [s.step_time_s for s in timed],
                                                   recipe.result.window)))
    return images
