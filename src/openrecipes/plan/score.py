"""The planner judged on data it was not fitted on: every measured point predicted with a whole group of points left
out of the fit and refitted without them.

Three ways to leave points out, from hardest to easiest:
- **source**: a publisher with all its releases at once (NVIDIA-NeMo/Megatron-Bridge, NVIDIA/dgxc-benchmarking,
  MLPerf Training, pytorch/torchtitan, the seeds' authors, our own runs). Releases of one publisher share their
  code, clusters and layouts, so leaving one release out (or one point) keeps its siblings in the fit and measures
  interpolation, not transfer.
- **part**: every point on one hardware variant (hardware/gpus.yaml), whatever its source.
- **release**: one release of one publisher (a container version, an MLPerf round, one of our measuring days).

Each refit is exact (openrecipes.plan.fit.fit on the points that stay). An efficiency that no remaining point of its
engine constrains is dropped from the refit, so its variant is predicted as a variant never measured is: carried
from a neighbour by physics (openrecipes.plan.variants).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

from openrecipes.catalog.hardware import variant_id
from openrecipes.catalog.paths import default_catalog_root
from openrecipes.catalog.store import Catalog, load_catalog
from openrecipes.forked import forked_map
from openrecipes.plan.constants import EFFICIENCY, Calibration
from openrecipes.plan.fit import fit
from openrecipes.plan.points import MeasuredPoint, SpeedPoint, reference_publisher, reference_rows, reference_tables
from openrecipes.plan.predict import context, predict_layout
from openrecipes.plan.trust import HeldOutPoint, Likeness, band_of, error_range, precision_words, range_basis

# A whole publisher, one release of it, one hardware part.
SOURCE, RELEASE, PART = "source", "release", "part"

# A record entry's publisher is its stored copy's repository; MLPerf keeps one repository per round.
MLPERF = "mlcommons/training_results_"
OURS = "OpenRecipes"


@dataclass(frozen=True)
class Source:
    publisher: str
    release: str


@lru_cache(maxsize=4)
def sources(root: Path | None = None) -> dict[str, Source]:
    """The source of every point that can be a speed point, by slug: record entries by their stored copy's repository
    and release, recipes by their author and measuring day, reference points by their section of
    reference_points.yaml (torchtitan's published runs; our own runs by the folder of their log)."""
    catalog = load_catalog(root or default_catalog_root())
    found: dict[str, Source] = {}
    for entry in catalog.record:
        run = entry.entry.published
        assert run is not None and run.reference is not None  # an imported entry always names its stored copy
        repository = run.reference.repository
        if repository.startswith(MLPERF):
            found[entry.slug] = Source("MLPerf Training", repository.removeprefix(MLPERF))
        else:
            found[entry.slug] = Source(repository, run.engine_version or run.reference.path)
    for recipe in catalog.recipes:
        author = recipe.entry.author.name
        found[recipe.slug] = Source(author, f"{author} {recipe.entry.result.measured}")
    for row in reference_rows():
        if "log" in row:
            found[row["name"]] = Source(OURS, row["log"].split("/")[1])
        else:
            found[row["name"]] = Source(reference_publisher(), "docs/performance.md")
    return found


def variant_of(point: MeasuredPoint) -> str:
    tables = reference_tables()
    return point.request.variant or variant_id(tables.gpus[point.request.gpu_type], tables)


def group_of(point: SpeedPoint, kind: str, found: dict[str, Source]) -> str:
    source = found[point.slug]
    return {SOURCE: source.publisher, RELEASE: f"{source.publisher}: {source.release}",
            PART: variant_of(point)}[kind]


def predicted_with(point: MeasuredPoint, calibration: Calibration) -> float:
    """The point's predicted tokens/s under a calibration (a refit with or without it)."""
    ctx = replace(context(point.request, reference_tables()), calibration=calibration)
    return predict_layout(ctx, point.layout).tokens_per_s_per_gpu


def _refit_without(points: Sequence[SpeedPoint], left_out: set[int], full: Calibration) -> Calibration:
    """The fit on every point but `left_out`, without the efficiencies no remaining point of their engine sets."""
    kept = [p for i, p in enumerate(points) if i not in left_out]
    constrained = {f"{EFFICIENCY}{p.request.engine}/{variant_of(p)}" for p in kept}
    dropped = frozenset(name for name in full.fitted_values() if name.startswith(EFFICIENCY)
                        and name not in constrained)
    return fit(kept, start=full).without(dropped)


def left_out_predictions(points: Sequence[SpeedPoint], kind: str, full: Calibration, found: dict[str, Source],
                         only: Collection[str] | None = None) -> list[float]:
    """Each point's prediction with its whole group (of `kind`) left out of the fit; the groups' exact refits are
    independent, so they are spread over the machine's cores. With `only`, just those groups are left out (the
    others' points are NaN): a sample of the exact refits, each of which costs about a full fit."""
    groups: dict[str, set[int]] = {}
    for i, point in enumerate(points):
        groups.setdefault(group_of(point, kind, found), set()).add(i)
    if only is not None:
        groups = {name: members for name, members in groups.items() if name in only}

    def predicted_without(members: set[int]) -> list[tuple[int, float]]:
        refit = _refit_without(points, members, full)
        return [(i, predicted_with(points[i], refit)) for i in sorted(members)]

    out = [math.nan] * len(points)
    for predicted in forked_map(predicted_without, list(groups.values()), minimum=2):
        for i, value in predicted:
            out[i] = value
    return out


@dataclass(frozen=True)
class Summary:
    """How a set of left-out predictions fares: errors are predicted / measured - 1."""

    points: int
    median_abs_error: float
    within_10: float  # share within +-10%
    within_20: float

    @staticmethod
    def of(errors: Iterable[float]) -> Summary:
        found = [abs(e) for e in errors]
        if not found:
            return Summary(0, float("nan"), float("nan"), float("nan"))
        return Summary(len(found), statistics.median(found), sum(e <= 0.10 for e in found) / len(found),
                       sum(e <= 0.20 for e in found) / len(found))


@dataclass(frozen=True)
class Scorecard:
    """Left-out errors of a set of points, and how the ranges `plan` prints for them hold: each point's range is set
    by the other publishers' points alone (openrecipes.plan.trust.range_basis, error_range), never by its own."""

    errors: Summary
    inside: float  # share of measurements inside their 90% range
    median_width: float  # high minus low, as a share of the prediction


def scorecard(points: Sequence[HeldOutPoint]) -> Scorecard:
    inside, widths = [], []
    for point in points:
        likeness = Likeness(point.covered, point.engine, point.precision, point.moe, band_of(point.gpus))
        low, high = error_range(range_basis(likeness, exclude_source=point.source)[0])
        inside.append(low <= point.source_error <= high)
        widths.append(1 / (1 + low) - 1 / (1 + high))
    return Scorecard(Summary.of(p.source_error for p in points), sum(inside) / len(inside),
                     statistics.median(widths))


def facets(point: HeldOutPoint) -> dict[str, str]:
    """The ways the scores are broken down: publisher, GPU-count band, engine, precision, dense or MoE, part."""
    return {"source": point.source, "band": f"{band_of(point.gpus)} GPUs", "engine": point.engine,
            "precision": precision_words(point.precision),
            "model": "MoE" if point.moe else "dense", "part": point.variant}


@dataclass(frozen=True)
class Unseen:
    """An entry added to the catalog since the planner's fit (openrecipes.plan.fitted_on), predicted by the fit as it
    stands: an out-of-sample error before any refit."""

    slug: str
    measured: float  # tokens/s per GPU
    predicted: float
    low: float  # the prediction's range
    high: float

    @property
    def error(self) -> float:
        return self.predicted / self.measured - 1

    @property
    def inside(self) -> bool:
        return self.low <= self.measured <= self.high


def unseen(slugs: Collection[str], catalog: Catalog) -> list[Unseen]:
    """Each of `slugs` (recipes and published entries outside the fit) the planner can express, predicted."""
    from openrecipes.plan.calibrate import measured_point
    from openrecipes.plan.public_record import compare

    found = []
    for entry in catalog.recipes:
        if entry.slug in slugs:
            point = measured_point(entry.slug, entry.entry)
            prediction = predict_layout(context(point.request, catalog.tables), point.layout)
            found.append(Unseen(entry.slug, entry.entry.result.tokens_per_s_per_gpu, prediction.tokens_per_s_per_gpu,
                                prediction.interval.low, prediction.interval.high))
    for record in catalog.record:
        if record.slug in slugs and record.entry.published is not None:
            row = compare(record, catalog)
            if row.predicted is not None and row.low is not None and row.high is not None:
                found.append(Unseen(record.slug, row.published, row.predicted, row.low, row.high))
    return found


def unseen_words(found: Sequence[Unseen]) -> str:
    """What the fit as it stands makes of the entries it has not seen, in a few words."""
    if not found:
        return "none the planner can express"
    if len(found) == 1:
        return f"predicted {found[0].error:+.1%}, {'inside' if found[0].inside else 'outside'} its range"
    inside = sum(u.inside for u in found)
    return (f"{len(found)} predicted, median |error| {statistics.median(abs(u.error) for u in found):.1%}, "
            f"{inside} inside their range")
