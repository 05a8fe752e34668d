"""How far to trust a prediction: leave-one-out errors, the intervals they give, and the memory margin.

Leave-one-out: for every measured point with a tokens/s figure, every fitted value is refitted without it
(openrecipes.plan.fit.refits_without_each, from the fit on every point) and the point is predicted; predicted /
measured - 1 is its held-out error. The errors, grouped by engine, GPU type and scale band, give each prediction its
interval (openrecipes.plan.trust). The memory margin is the largest share by which the planner
under-predicted the allocator's peak of a run that ran, per engine. `openrecipes refresh` recomputes
everything into heldout.json (read by `plan` through openrecipes.plan.trust); tests/test_plan_heldout.py fails when
that file is stale.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
import statistics
from collections import Counter
from collections.abc import Collection
from dataclasses import asdict
from pathlib import Path

from openrecipes.atomic import write_atomic
from openrecipes.catalog.hardware import variant_id
from openrecipes.catalog.paths import default_catalog_root
from openrecipes.engines.registry import RUN_DEFAULT
from openrecipes.engines.registry import names as engine_names
from openrecipes.errors import UserError
from openrecipes.plan.accuracy import allocator_gib, spearman
from openrecipes.plan.calibrate import measured_points, speed_points
from openrecipes.plan.constants import calibration, links
from openrecipes.plan.fit import fit, refits_without_each
from openrecipes.plan.points import reference_tables
from openrecipes.plan.predict import context, predict_layout
from openrecipes.plan.score import PART, SOURCE, group_of, left_out_predictions, predicted_with, sources, variant_of
from openrecipes.plan.shape import model_shape
from openrecipes.plan.trust import (
    HELDOUT_FILE,
    HeldOutPoint,
    MemoryMargin,
    input_digests,
    layout_features,
    margin_key,
    precision_class,
    stored,
)
from openrecipes.plan.words import describe

# A model and GPU type needs this many measured layouts before its rank agreement is reported.
RANKED_GROUP = 4
# The largest publisher or variant `refresh --check` leaves out to compare the stored table (a refit without one of
# 132 points took 200 s on one core, without one of 5 to 90 points 12 to 35 s).
SAMPLE_GROUP_POINTS = 90


def leave_one_out(root: Path | None = None, fixed: dict[str, float] | None = None,
                  groups: Collection[str] | None = None) -> list[HeldOutPoint]:
    """Each point predicted with every value fitted on all points (in-sample), without it alone (held out), without
    every point of its publisher (the error that sets ranges) and without every point on its hardware variant
    (openrecipes.plan.score). `groups` names the publishers and variants left out whole (None: every one); the
    other points' last two predictions are NaN. Those exact refits are most of the cost, and a term's effect on the
    held-out errors needs none of them (benchmarks/plan_loo.py)."""
    points = speed_points(root)
    full = fit(points, fixed=fixed)
    found = sources(root)
    by_source = left_out_predictions(points, SOURCE, full, found, groups)
    by_part = left_out_predictions(points, PART, full, found, groups)
    covered = {(found[p.slug].publisher, p.request.engine, variant_of(p)) for p in points}
    rows = []
    for i, (point, without) in enumerate(zip(points, refits_without_each(points, full, fixed), strict=True)):
        r, source = point.request, found[point.slug].publisher
        variant = variant_of(point)
        rows.append(HeldOutPoint(
            point.slug, r.model, r.gpu_type, r.gpus, r.engine, describe(point.layout), point.tokens_per_s_per_gpu,
            round(predicted_with(point, full), 2), round(predicted_with(point, without), 2), variant,
            precision_class(point.layout), model_shape(reference_tables().models[r.model]).is_moe, source,
            round(by_source[i], 2),
            any(other != source and engine == r.engine and part == variant for other, engine, part in covered),
            round(by_part[i], 2)))
    return rows


def rank_agreement(rows: list[HeldOutPoint]) -> dict[str, tuple[int, float]]:
    """Spearman of held-out predictions against measurements within each model and GPU type with enough layouts."""
    groups: dict[str, list[HeldOutPoint]] = {}
    for row in rows:
        groups.setdefault(f"{row.model} on {row.gpu_type}", []).append(row)
    return {name: (len(group), round(spearman([r.held_out for r in group], [r.measured for r in group]), 3))
            for name, group in groups.items() if len({r.layout for r in group}) >= RANKED_GROUP}


def _arms(root: Path) -> list[tuple[dict, str]]:
    """Every measured arm tune and the sweeps recorded (runs/tune-*/tune.json, runs/sweep-<model>-<gpu>xN/*.json),
    each with its GPU type."""
    arms = []
    for path in sorted(root.glob("runs/tune-*/tune.json")):
        record = json.loads(path.read_text())
        arms += [(o, record["gpu"]) for o in record["outcomes"]]
    for path in sorted(root.glob("runs/sweep-*/*.json")):
        gpu = re.search(r"-([a-z0-9]+)x\d+$", path.parent.name)
        if gpu is None:
            raise UserError(f"{path.parent}: a sweep's folder is named runs/sweep-<model>-<gpu>x<gpus>; rename it")
        arms.append((json.loads(path.read_text()), gpu.group(1).upper()))
    return [(arm, gpu) for arm, gpu in arms if arm.get("oom") is not None]


def memory_margins(root: Path | None = None) -> list[MemoryMargin]:
    """Per engine, the margin a layout must leave free: the largest under-prediction of a measured allocator peak
    (torchtitan's max reserved, so the allocator's reserved-but-unallocated slack is inside it), and at least what
    every out-of-memory arm of tune or a sweep needed (capacity / its predicted peak - 1). An engine without measured
    peaks borrows the widest engine's margin, and says so."""
    root = Path(root or default_catalog_root())
    reserve = calibration().runtime_reserve_gib
    ratios: dict[str, list[tuple[float, str]]] = {}
    for point in measured_points(root).values():
        if point.memory_gib:
            predicted = allocator_gib(predict_layout(context(point.request, reference_tables()),
                                                     point.layout).memory.total_gib, reserve)
            ratios.setdefault(margin_key(point.request.engine, point.layout), []).append(
                (point.memory_gib / predicted - 1, point.slug))
    arms = _arms(root)  # tune and the sweeps run torchtitan
    out_of_memory = [(arm, gpu) for arm, gpu in arms if arm["oom"]]
    for arm, gpu in out_of_memory:
        spec = reference_tables().gpus[gpu]  # tune and the sweeps ran on the type's default variant (our H200)
        capacity = links(variant_id(spec, reference_tables()), spec).capacity_gib
        needed = (capacity - reserve) / allocator_gib(arm["predicted_memory_gib"], reserve) - 1
        ratios.setdefault(RUN_DEFAULT.name, []).append((needed, arm["slug"]))
    margins = []
    for engine, found in sorted(ratios.items()):
        worst, slug = max(found)
        basis = f"largest under-prediction of {len(found)} measured {engine} peaks ({slug})"
        if engine == RUN_DEFAULT.name:  # the tune and sweep arms pull no kernel
            basis += f"; {len(out_of_memory)} of {len(arms)} tune and sweep arms ran out of memory"
        margins.append(MemoryMargin(engine, round(max(worst, 0.0), 4), basis))
    widest = max((m for m in margins if m.engine in engine_names()), key=lambda m: m.margin)
    for engine in engine_names():
        if engine not in ratios:
            margins.append(MemoryMargin(engine, widest.margin, f"no measured {engine} peak: {widest.engine}'s margin"))
    return margins


def compute(root: Path | None = None, groups: Collection[str] | None = None) -> dict:
    rows = leave_one_out(root, groups=groups)
    return {"inputs": input_digests(), "points": [asdict(row) for row in rows],
            "rank_agreement": {k: list(v) for k, v in rank_agreement(rows).items()},
            "memory_margins": [asdict(m) for m in memory_margins(root)],
            "measured_features": {engine: sorted({f for p in speed_points(root) if p.request.engine == engine
                                                  for f in layout_features(p.layout)}) for engine in engine_names()}}


def sampled_groups(root: Path | None, seal: str) -> frozenset[str]:
    """One publisher and one hardware variant to leave out when the stored table is checked, a different pair for
    different inputs. Only groups of at most SAMPLE_GROUP_POINTS points: without a large publisher the refit takes
    minutes."""
    points, found = speed_points(root), sources(root)
    picked = []
    for kind in (SOURCE, PART):
        sizes = Counter(group_of(point, kind, found) for point in points)
        small = [name for name, size in sizes.items() if size <= SAMPLE_GROUP_POINTS]
        picked.append(min(small, key=lambda name: hashlib.sha256(f"{seal}\0{name}".encode()).hexdigest()))
    return frozenset(picked)


def differs_on_a_sample(root: Path | None, seal: str) -> str | None:
    """Where the stored table is not what the planner computes now, recomputing every column but the whole-group
    refits, and those for one publisher and one variant (sampled_groups): None when it is."""
    groups = sampled_groups(root, seal)
    fresh, kept = compute(root, groups), copy.deepcopy(stored())  # stored() is cached: blank a copy
    for table in (fresh, kept):
        for row in table.get("points", []):
            row["source_held_out"] = row["source_held_out"] if row["source"] in groups else None
            row["part_held_out"] = row["part_held_out"] if row["variant"] in groups else None
    if fresh == kept:
        return None
    return (f"its contents differ from what the planner computes from its inputs (checked with "
            f"{' and '.join(sorted(groups))} left out)")


def median_abs_error(rows: list[HeldOutPoint]) -> float:
    return statistics.median(abs(r.error) for r in rows)


def write(root: Path | None = None) -> Path:
    write_atomic(HELDOUT_FILE, json.dumps(compute(root), indent=1) + "\n")
    return HELDOUT_FILE
