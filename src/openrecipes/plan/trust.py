"""What a prediction's trust rests on, read from heldout.json (written by openrecipes.plan.heldout): the held-out
errors that give each prediction its interval, and each engine's memory margin."""

from __future__ import annotations

import hashlib
import json
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path

import numpy as np

from openrecipes.catalog.paths import DERIVED
from openrecipes.errors import UserError
from openrecipes.plan.constants import HERE
from openrecipes.plan.layouts import Layout
from openrecipes.textfile import MIB, read_text

HELDOUT_FILE = DERIVED / "heldout.json"
DERIVED_MAX_BYTES = 64 * MIB  # heldout.json is about 100 KB


@dataclass(frozen=True)
class HeldOutPoint:
    name: str
    model: str
    gpu_type: str
    gpus: int
    engine: str
    layout: str
    measured: float
    in_sample: float  # predicted with every point in the fit
    held_out: float  # predicted with this point alone left out of the fit
    variant: str  # the hardware variant it ran on (hardware/gpus.yaml)
    precision: str  # "bf16", or "low" where its GEMMs run in FP8/MXFP8/NVFP4 (precision_class)
    moe: bool  # a mixture-of-experts model
    source: str  # its publisher (openrecipes.plan.score.sources)
    source_held_out: float  # predicted with every point of its publisher left out of the fit
    covered: bool  # its engine kept measured points on its variant when its publisher was left out
    part_held_out: float  # predicted with every point on its hardware variant left out of the fit

    @property
    def error(self) -> float:
        return self.held_out / self.measured - 1

    @property
    def source_error(self) -> float:
        """The error that sets ranges: the point predicted by a fit that never saw its publisher."""
        return self.source_held_out / self.measured - 1

    @property
    def part_error(self) -> float:
        return self.part_held_out / self.measured - 1


@dataclass(frozen=True)
class MemoryMargin:
    engine: str
    margin: float  # share of the predicted allocator peak a layout must leave free
    basis: str


# What every range is calibrated on: the errors of measured points predicted by fits that never saw their publisher.
SOURCE_LEFT_OUT = "left out with its source"


@dataclass(frozen=True)
class Interval:
    low: float  # tokens/s per GPU
    high: float
    basis: str  # which left-out errors set it, and why it is wide where it is
    constrained: bool  # False: the layout uses a feature no measured point of its engine has
    basis_kind: str = SOURCE_LEFT_OUT


# The planner's own data heldout.json was computed from: an edit to either makes it stale.
INPUTS = ("calibration.yaml", "reference_points.yaml")


def input_digests() -> dict[str, str]:
    return {name: hashlib.sha256((HERE / name).read_bytes()).hexdigest() for name in INPUTS}


def read_derived(path: Path) -> dict:
    """A JSON file `openrecipes refresh` writes (heldout.json, public_record.json); unreadable: one line and the fix."""
    try:  # a regular file only (a FIFO would block), of a bounded size
        return json.loads(read_text(path, DERIVED_MAX_BYTES, "derived JSON file"))
    except (OSError, json.JSONDecodeError) as error:
        raise UserError(f"{path}: not what `openrecipes refresh` writes ({error}); run it to write the "
                        "file again") from None


@lru_cache(maxsize=1)
def stored() -> dict:
    return read_derived(HELDOUT_FILE)


def check_current() -> None:
    """One line and exit 2 where heldout.json was computed from another calibration.yaml or reference_points.yaml
    (refitted or edited since): its ranges and margins would not be this calibration's."""
    written = stored().get("inputs", {})
    for name, digest in input_digests().items():
        if written.get(name) != digest:
            raise UserError(f"{HELDOUT_FILE}: written for another src/openrecipes/plan/{name} (edited or refitted "
                            "since); run `openrecipes refresh` to write it again")


@lru_cache(maxsize=1)
def stored_points() -> tuple[HeldOutPoint, ...]:
    return tuple(HeldOutPoint(**row) for row in stored()["points"])


# Layouts that pull a Liger kernel have their own memory margin: the kernels' memory terms (openrecipes.plan.levers)
# under-predict the measured peaks of runs/levers-20261201 by more than any layout without them.
WITH_KERNELS = " with Liger kernels"


def margin_key(engine: str, layout: Layout) -> str:
    """The memory margin a layout is held to: its engine's, or its engine's with Liger kernels where it pulls one."""
    return engine + WITH_KERNELS if layout.levers.kernels else engine


def memory_margin(engine: str) -> MemoryMargin:
    """The margin of an engine, or of `margin_key`'s engine with kernels (the engine's own where none was measured)."""
    margins = {m["engine"]: m for m in stored()["memory_margins"]}
    return MemoryMargin(**margins.get(engine, margins[engine.removesuffix(WITH_KERNELS)]))


def layout_features(layout: Layout) -> frozenset[str]:
    """The parts of a layout that need a measured point of their own to be trusted."""
    return _features(layout.tp > 1, layout.pp > 1, layout.vpp > 1, layout.cp > 1, layout.ep > 1,
                     layout.levers.offload_fraction > 0, layout.recompute)


@cache  # a few dozen combinations cover a request's thousands of layouts
def _features(tp: bool, pp: bool, vpp: bool, cp: bool, ep: bool, offload: bool, recompute: str) -> frozenset[str]:
    found = {name for name, on in (("TP > 1", tp), ("PP > 1", pp), ("VPP > 1", vpp), ("CP > 1", cp), ("EP > 1", ep),
                                   ("optimizer offload", offload)) if on}
    return frozenset(found | {f"{recompute} recompute"})


def precision_words(precision: str) -> str:
    """A precision class as a reader sees it."""
    return "BF16" if precision == "bf16" else "FP8/MXFP8/NVFP4"


def precision_class(layout: Layout) -> str:
    """BF16, or low where the layout's GEMMs run in FP8, MXFP8 or NVFP4: their errors differ (docs/planning.md)."""
    return "low" if layout.levers.low_precision or layout.levers.float8 else "bf16"


# Scale bands by GPU count: one node, up to eight nodes, a pod, beyond.
BANDS = ((1, 8, "1-8"), (9, 64, "9-64"), (65, 1024, "65-1,024"), (1025, 2**20, "1,025+"))
# A range is the central share of a group's held-out errors (about 90% of held-out measurements inside it) ...
COVERAGE = 0.90
# ... of a group of at least this many points (docs/planning.md, "How far to trust it").
MIN_GROUP = 8
# Where the layout uses a feature no measured point of its engine has, the range's errors are widened by this factor
# in log space (measured = predicted / (1 + error), so (1 + error) is raised to it): a ratio stays a ratio, where
# doubling the error itself could drive 1 + error to zero and the range to twenty-five times its prediction.
UNCONSTRAINED_WIDENING = 2.0


def band_of(gpus: int) -> str:
    return next(label for low, high, label in BANDS if low <= gpus <= high)


@dataclass(frozen=True)
class Likeness:
    """What makes a measured point like a query: whether its engine has measured points on its part, then its engine,
    precision, dense or MoE, and scale band. A range uses the most alike points there are enough of."""

    covered: bool
    engine: str
    precision: str
    moe: bool
    band: str

    def of(self, point: HeldOutPoint) -> tuple[bool, ...]:
        return (point.covered == self.covered, point.engine == self.engine, point.precision == self.precision,
                point.moe == self.moe, band_of(point.gpus) == self.band)

    def words(self, matched: tuple[bool, ...]) -> str:
        names = (("on parts its engine measured" if self.covered else "on parts its engine never measured"),
                 self.engine, precision_words(self.precision),
                 "MoE" if self.moe else "dense", f"at {self.band} GPUs")
        return ", ".join(name for name, used in zip(names, matched, strict=True) if used)


# Most alike first: every feature, then dropping the scale band, then dense/MoE, then the engine, then the precision.
BACK_OFF = ((True, True, True, True, True), (True, True, True, True, False), (True, True, True, False, False),
            (True, False, True, False, False), (True, False, False, False, False))


def central(errors: tuple[float, ...]) -> tuple[float, float]:
    """The central COVERAGE of the errors: (low, high). The quantiles are split conformal ones (each tail's level
    moved out by (n + 1) / n, numpy's linear quantiles): a new point falls inside the range of n earlier ones at least
    COVERAGE of the time, where the plain central share of n points holds less. The range is not stretched to hold
    the prediction itself: where alike points were mostly predicted high, the range lies mostly below it."""
    upper = min(1.0, (1 - (1 - COVERAGE) / 2) * (len(errors) + 1) / len(errors))
    low, high = np.quantile(errors, [1 - upper, upper])
    return float(low), float(high)


@cache
def _covered(engine: str, variant: str) -> bool:
    return any(p.engine == engine and p.variant == variant for p in stored_points())


def range_basis(likeness: Likeness, exclude_source: str | None = None) -> tuple[tuple[HeldOutPoint, ...], str]:
    """(points, which ones) whose errors set a prediction's range: the most alike points with at least MIN_GROUP of
    them (BACK_OFF). `exclude_source` leaves a whole publisher out (benchmarks and tests score each point against a
    range its own publisher did not set)."""
    points = [p for p in stored_points() if p.source != exclude_source]
    for matched in BACK_OFF:
        alike = tuple(p for p in points if all(got for got, used in zip(likeness.of(p), matched, strict=True) if used))
        if len(alike) >= MIN_GROUP:
            return alike, likeness.words(matched)
    return tuple(points), "every measured point"


def error_range(points: Sequence[HeldOutPoint]) -> tuple[float, float]:
    """The central COVERAGE of the error a point of a publisher none of `points` came from may have (their errors
    predicted without their publisher). Errors cluster by publisher (its software, clusters and way of measuring), so
    each error is split into its publisher's offset (the median of the publisher's log errors here) and the residual
    about it, and every residual is added to every publisher's offset and to none (a publisher the fit predicts as
    it is): the range holds the spread between publishers as well as within one. Left-out scoring: 73% of points
    inside at a median width of 58%, where the pooled errors' central 90% held 67% at 77% (docs/planning.md)."""
    logs: dict[str, list[float]] = {}
    for point in points:
        logs.setdefault(point.source, []).append(math.log1p(point.source_error))
    offsets = {source: statistics.median(values) for source, values in logs.items()}
    residuals = [value - offsets[source] for source, values in logs.items() for value in values]
    shifted = [offset + residual for offset in [*offsets.values(), 0.0] for residual in residuals]
    return central(tuple(math.expm1(value) for value in shifted))


def interval(engine: str, variant: str, layout: Layout, tokens_per_s: float, moe: bool,
             catalog_root: Path | None = None) -> Interval:
    """The range the left-out errors put around a prediction (measured = predicted / (1 + error)): the central 90% of
    the leave-one-source-out errors of the points most like it (range_basis)."""
    likeness = Likeness(_covered(engine, variant), engine, precision_class(layout), moe, band_of(layout.gpus))
    high, low, basis, constrained = _error_bounds(likeness, variant, layout_features(layout), catalog_root)
    return Interval(round(tokens_per_s / high, 1), round(tokens_per_s / low, 1), basis, constrained)


def _carried_note(engine: str, variant: str, catalog_root: Path | None) -> str:
    from openrecipes.plan.constants import calibration
    from openrecipes.plan.variants import efficiency_source

    source = efficiency_source(calibration(), engine, variant, catalog_root)
    if source.own:
        return ""
    return (f"{variant} has no measured {engine} point of its own: its efficiency is {source.source}'s carried by "
            f"physics (sustained clock under its power, HBM bandwidth: x{source.ratio:.3f}); ")


@cache  # the same for every layout with these features: worked out once, not per layout
def _error_bounds(likeness: Likeness, variant: str, features: frozenset[str],
                  catalog_root: Path | None) -> tuple[float, float, str, bool]:
    """(1 + the high error, 1 + the low error, the basis, constrained): what predicted tokens/s are divided by."""
    alike, where = range_basis(likeness)
    low, high = error_range(alike)
    carried = _carried_note(likeness.engine, variant, catalog_root)
    publishers = len({point.source for point in alike})
    basis = (f"{SOURCE_LEFT_OUT}: {carried}central {COVERAGE:.0%} of the errors of {len(alike)} points ({where}) "
             f"predicted without their publisher, each of {publishers} publishers' offsets or none added to every "
             f"residual about them ({low:+.1%} to {high:+.1%})")
    missing = sorted(features - set(stored()["measured_features"][likeness.engine]))
    if missing:
        basis += f"; no measured {likeness.engine} layout with {', '.join(missing)}: doubled"
        return (1 + high) ** UNCONSTRAINED_WIDENING, (1 + low) ** UNCONSTRAINED_WIDENING, basis, False
    return 1 + high, 1 + low, basis, True
