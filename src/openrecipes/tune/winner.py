"""The winner written as a catalog recipe through `openrecipes record`'s path: its reference arm and checks."""

from __future__ import annotations

from pathlib import Path

from openrecipes.atomic import write_atomic
from openrecipes.audit.record import RecordedRun, recipe_text, record, write_recipe
from openrecipes.catalog.paths import RUN_COMMAND, relative_path
from openrecipes.errors import UserError
from openrecipes.tune.candidates import Candidate
from openrecipes.tune.search import Outcome, Setup, TuneResult

HEADER = "# Written by `openrecipes tune` from measured short runs; fields: schema/recipe.schema.yaml.\n"


def _notes(s: Setup, result: TuneResult, winner: Outcome) -> str:
    m = winner.measured_run.figures
    dropped = sum(1 for o in result.outcomes if o.measurement is None)
    ooms = [o.candidate.label for o in result.outcomes if o.measurement is not None and o.measurement.oom]
    reference = result.reference
    arms = "; ".join(
        f"{o.candidate.label}{' (reference)' if o is reference else ''}: "
        + (f"{o.measurement.tokens_per_s_per_gpu:,.0f}" if o.measurement.ok else "out of memory" if o.measurement.oom
           else "failed")
        for o in [reference, *result.outcomes] if o.measurement is not None)
    lanes = (f" on {result.lanes} lanes at once ({result.wall_minutes:.1f} wall minutes)" if result.lanes > 1 else "")
    return (
        f"Tuned by `openrecipes tune` from {relative_path(s.base_path, s.root)}: {len(result.measured)} of "
        f"{len(s.ranked)} candidate layouts measured with {m.steps_per_run}-step runs (window {m.window[0]}-"
        f"{m.window[1]}), {dropped} not measured (cannot win or over budget); {result.spent_minutes:.1f} of "
        f"{result.budget_minutes:g} budget GPU-lane minutes spent{lanes}. Tokens/s/GPU of each arm measured: {arms}. "
        f"Refitted efficiency {result.efficiency.of(winner.candidate.layout):.4f} ({result.efficiency.points} points). "
        f"Out of memory: {', '.join(ooms) or 'none'}. Stopped: {result.stop_reason}.")


def default_recipe_path(s: Setup, winner: Candidate) -> Path:
    card_stem = s.tables.model_files[s.base.model].stem
    return s.root / "recipes" / card_stem / s.base.gpu.type.lower() / f"tuned-{winner.slug}.yaml"


def write_winner(s: Setup, result: TuneResult, out_recipe: Path | None = None) -> Path:
    """Check the winner against the reference arm (config, convergence), then write its recipe."""
    winner = result.winner
    if winner is None:
        raise UserError("no candidate ran to the end; nothing to write (see the table above)")
    winner_arm = winner.arm if winner.arm is not None else result.reference.arm_to_run
    arms = {}
    for name, outcome, arm in (("reference", result.reference, result.reference.arm_to_run),
                               ("candidate", winner, winner_arm)):
        folder = outcome.measured_run.log.parent
        write_atomic(folder / RUN_COMMAND, arm.recipe.run)  # each arm's exact command beside its log
        arms[name] = RecordedRun(folder, arm.recipe.run)
    steps = winner.measured_run.figures.steps_per_run
    recorded = record(winner_arm.recipe, arms["candidate"], arms["reference"], s.root, s.tables,
                      notes=_notes(s, result, winner), window=winner.measured_run.figures.window)
    result.config, result.convergence = recorded.config, recorded.convergence
    summary = (f"`openrecipes tune`: configuration {recorded.config.result}, {steps}-step convergence "
               f"{recorded.convergence.result} against the base recipe's stock configuration")
    reference = (f"{relative_path(arms['reference'].folder, s.root)}: {relative_path(s.base_path, s.root)} at "
                 f"{steps} steps")
    recipe = recorded.recipe.model_copy(update={"correctness": recorded.recipe.correctness.model_copy(
        update={"summary": summary, "reference": reference})}).revalidated()
    path = Path(out_recipe) if out_recipe else default_recipe_path(s, winner.candidate)
    write_recipe(path, recipe_text(recipe, HEADER), s.tables, s.root, option="--out-recipe")
    result.recipe_path = path
    return path
