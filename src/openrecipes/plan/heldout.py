"""How far to trust a prediction: leave-one-out errors, the intervals they give, and the memory margin.

Leave-one-out: for every measured point with a tokens/s figure, every fitted value is refitted without it
(openrecipes.plan.fit) and the point is predicted; predicted / measured - 1 is its held-out error. The errors, grouped
by engine and GPU type, are each prediction's interval. The memory margin is the largest share by which the planner
under-predicted the allocator's peak of a run that ran, per engine. `python -m openrecipes.plan.heldout` recomputes
everything into heldout.json (read by `plan` through openrecipes.plan.trust); tests/test_plan_heldout.py fails when
that file is stale.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from openrecipes.atomic import write_atomic
from openrecipes.plan.accuracy import allocator_gib, spearman
from openrecipes.plan.calibrate import MeasuredPoint, measured_points, reference_tables, speed_points
from openrecipes.plan.constants import calibration
from openrecipes.plan.fit import fit
from openrecipes.plan.layouts import Layout
from openrecipes.plan.predict import context, predict_layout
from openrecipes.plan.trust import HELDOUT_FILE, HeldOutPoint, MemoryMargin, layout_features

# A model and GPU type needs this many measured layouts before its rank agreement is reported.
RANKED_GROUP = 4


def _describe(layout: Layout) -> str:
    parts = [layout.label, f"{layout.recompute} recompute", f"{layout.rows_per_microbatch} row(s) a microbatch"]
    parts += [f"offload {layout.offload_fraction:g}"] if layout.offload_fraction else []
    parts += ["compiled"] if layout.compile else []
    parts += ["no reshard"] if not layout.reshard_after_forward else []
    return ", ".join(parts)


def _predicted(point: MeasuredPoint, cal) -> float:
    ctx = replace(context(point.request, reference_tables()), calibration=cal)
    return predict_layout(ctx, point.layout).tokens_per_s_per_gpu


def leave_one_out(root: Path | None = None, fixed: dict[str, float] | None = None) -> list[HeldOutPoint]:
    points = speed_points(root)
    full = fit(points, fixed=fixed)
    rows = []
    for point in points:
        without = fit([p for p in points if p is not point], start=full, fixed=fixed)
        r = point.request
        rows.append(HeldOutPoint(point.slug, r.model, r.gpu_type, r.gpus, r.engine, _describe(point.layout),
                                 point.tokens_per_s_per_gpu, round(_predicted(point, full), 2),
                                 round(_predicted(point, without), 2)))
    return rows


def rank_agreement(rows: list[HeldOutPoint]) -> dict[str, tuple[int, float]]:
    """Spearman of held-out predictions against measurements within each model and GPU type with enough layouts."""
    groups: dict[str, list[HeldOutPoint]] = {}
    for row in rows:
        groups.setdefault(f"{row.model} on {row.gpu_type}", []).append(row)
    return {name: (len(group), round(spearman([r.held_out for r in group], [r.measured for r in group]), 3))
            for name, group in groups.items() if len({r.layout for r in group}) >= RANKED_GROUP}


def memory_margins(root: Path | None = None) -> list[MemoryMargin]:
    """Per engine, the largest under-prediction of a measured allocator peak (a run that ran: none of ours ran out
    of memory); an engine without measured peaks borrows the largest other engine's, and says so."""
    reserve = calibration().runtime_reserve_gib
    ratios: dict[str, list[tuple[float, str]]] = {}
    for point in measured_points(root).values():
        if point.memory_gib:
            predicted = allocator_gib(predict_layout(context(point.request, reference_tables()),
                                                     point.layout).memory.total_gib, reserve)
            ratios.setdefault(point.request.engine, []).append((point.memory_gib / predicted - 1, point.slug))
    margins = []
    for engine, found in sorted(ratios.items()):
        worst, slug = max(found)
        margins.append(MemoryMargin(engine, round(max(worst, 0.0), 4),
                                    f"largest under-prediction of {len(found)} measured {engine} peaks ({slug})"))
    widest = max(margins, key=lambda m: m.margin)
    for engine in ("megatron", "torchtitan"):
        if engine not in ratios:
            margins.append(MemoryMargin(engine, widest.margin, f"no measured {engine} peak: {widest.engine}'s margin"))
    return margins


def compute(root: Path | None = None) -> dict:
    rows = leave_one_out(root)
    return {"points": [asdict(row) for row in rows],
            "rank_agreement": {k: list(v) for k, v in rank_agreement(rows).items()},
            "memory_margins": [asdict(m) for m in memory_margins(root)],
            "measured_features": {engine: sorted(_features(engine, root)) for engine in ("megatron", "torchtitan")}}


def _features(engine: str, root: Path | None) -> set[str]:
    return {f for p in speed_points(root) if p.request.engine == engine for f in layout_features(p.layout)}


def median_abs_error(rows: list[HeldOutPoint]) -> float:
    errors = sorted(abs(r.error) for r in rows)
    middle = len(errors) // 2
    return errors[middle] if len(errors) % 2 else (errors[middle - 1] + errors[middle]) / 2


def write(root: Path | None = None) -> Path:
    write_atomic(HELDOUT_FILE, json.dumps(compute(root), indent=1) + "\n")
    return HELDOUT_FILE


if __name__ == "__main__":
    print(f"wrote {write()}")

