"""What tune prints: the dry-run plan and the summary of a search."""

from __future__ import annotations

from openrecipes.catalog.command import parse_run
from openrecipes.catalog.paths import relative_path
from openrecipes.engines.registry import engine_named
from openrecipes.plan.levers import time_effect
from openrecipes.tune.arms import arm_of, reference_arm
from openrecipes.tune.candidates import (
    HELD_OUT_ERROR_BOUND,
    MEASURE_STEPS,
    contenders,
    estimated_minutes,
    optimistic_prediction,
    pessimistic_prediction,
    rank,
    within_budget,
)
from openrecipes.tune.search import Setup, TuneResult


def dry_run_text(s: Setup, budget_minutes: float, steps: int = MEASURE_STEPS) -> str:
    efficiency = s.prior
    ranked = rank(s.ranked, efficiency)
    pool = contenders(ranked, efficiency)
    reference_minutes = estimated_minutes(s.reference, efficiency, steps)
    chosen = within_budget(pool, efficiency, budget_minutes - reference_minutes, steps)
    base = relative_path(s.base_path, s.root)
    width = max([44, *(len(c.label) for c in ranked)])
    lines = [f"tune {s.base.model} on {s.base.gpu.count} x {s.base.gpu.type} from {base}: "
             f"{len(ranked)} fitting torchtitan layouts, {len(pool)} can beat the best one's pessimistic prediction "
             f"(error bound {HELD_OUT_ERROR_BOUND:.1%}), {len(chosen)} fit {budget_minutes:g} minutes after the "
             f"{reference_minutes:.1f}-minute reference arm; predicted, not measured",
             f"{'#':>3}  {'candidate':<{width}} {'tokens/s/GPU':>12} {'range':>15} {'GiB':>6} {'minutes':>7}  plan"]
    unmeasured = sorted({name for c in ranked for name in time_effect(c.layout, s.base.gpu.type).unmeasured})
    if unmeasured:
        lines.insert(1, f"time effect unmeasured, predicted as without them: {', '.join(unmeasured)}")
    for number, c in enumerate(ranked, 1):
        tps = c.tokens_per_s_per_gpu(efficiency.of(c.layout))
        plan = "measure" if c in chosen else "budget" if c in pool else "cannot win"
        lines.append(f"{number:>3}  {c.label:<{width}} {tps:>12,.0f} "
                     f"{pessimistic_prediction(c, efficiency):>7,.0f}-{optimistic_prediction(c, efficiency):<7,.0f} "
                     f"{c.memory_gib:>6.1f} {estimated_minutes(c, efficiency, steps):>7.1f}  {plan}")
    total = reference_minutes + sum(estimated_minutes(c, efficiency, steps) for c in chosen)
    lines += ["", f"estimated device time: {total:.1f} of {budget_minutes:g} minutes (at most; candidates that cannot "
              "win after a measurement are skipped); runs under " + relative_path(s.run_root, s.root), "",
              f"# reference arm: {relative_path(s.base_path, s.root)} at {steps} steps"]
    reference = reference_arm(s.base, s.card, s.reference, steps)
    runner = engine_named(s.base.engine).runner
    lines.append(runner.launch(reference.recipe, s.card, parse_run(reference.recipe.run), steps).script().rstrip())
    for c in chosen:
        arm = arm_of(c.slug, s.base, s.card, c, steps)
        lines += ["", f"# {c.label} -> {relative_path(s.run_root / c.slug, s.root)}",
                  runner.launch(arm.recipe, s.card, parse_run(arm.recipe.run), steps).script().rstrip()]
    return "\n".join(lines) + "\n"


def summary_text(result: TuneResult) -> str:
    arms = [result.reference, *result.outcomes]
    width = max([44, *(len(o.candidate.label) for o in arms)])
    lines = [f"{'candidate':<{width}} {'predicted':>10} {'measured':>10} {'CV %':>6}  verdict"]
    for o in arms:
        if o.measurement is None:
            continue
        m = o.measurement
        predicted = f"{o.predicted_at_measurement:,.0f}" if o.predicted_at_measurement else "-"
        measured = f"{m.tokens_per_s_per_gpu:,.0f}" if m.ok else "-"
        cv = f"{m.step_time_cv_percent:.2f}" if m.ok else "-"
        verdict = "reference arm" if o is result.reference else (o.dropped or "measured")
        lines.append(f"{o.candidate.label:<{width}} {predicted:>10} {measured:>10} {cv:>6}  "
                     f"{'WINNER; ' if o is result.winner else ''}{verdict}")
    skipped = sum(1 for o in result.outcomes if o.measurement is None)
    lines.append(f"{len(result.measured)} measured, {skipped} not measured; {result.spent_minutes:.1f} of "
                 f"{result.budget_minutes:g} minutes ({result.wall_minutes:.1f} wall minutes on {result.lanes} "
                 f"lane(s)); stopped: {result.stop_reason}")
    return "\n".join(lines) + "\n"
