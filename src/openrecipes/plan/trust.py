"""What a prediction's trust rests on, read from heldout.json (written by openrecipes.plan.heldout): the held-out
errors that give each prediction its interval, and each engine's memory margin."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path

import numpy as np

from openrecipes.errors import UserError
from openrecipes.plan.constants import HERE
from openrecipes.plan.layouts import Layout
from openrecipes.textfile import MIB, read_text

HELDOUT_FILE = HERE / "heldout.json"
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
    held_out: float  # predicted with this point left out of the fit
    variant: str  # the hardware variant it ran on (hardware/gpus.yaml)
    precision: str  # "bf16", or "low" where its GEMMs run in FP8/MXFP8/NVFP4 (precision_class)
    transferred: float  # predicted with its engine's points on its variant left out (carried from other variants)
    band_held_out: float  # predicted with its engine's points in its scale band left out

    @property
    def error(self) -> float:
        return self.held_out / self.measured - 1

    def error_of(self, basis: str) -> float:
        """Its error under a range basis: held out alone, or with its variant or its band left out."""
        predicted = {HELD_OUT: self.held_out, OTHER_VARIANTS: self.transferred, OTHER_BANDS: self.band_held_out}
        return predicted[basis] / self.measured - 1


@dataclass(frozen=True)
class MemoryMargin:
    engine: str
    margin: float  # share of the predicted allocator peak a layout must leave free
    basis: str


# What a range is calibrated on: the held-out errors of measured points of this engine on this variant and scale
# band, or, where those are too few, the error of carrying the fit to a variant or a band it has not measured.
HELD_OUT = "held-out on this variant"
OTHER_VARIANTS = "transferred from other variants"
OTHER_BANDS = "transferred from other scale bands"
BASES = (HELD_OUT, OTHER_VARIANTS, OTHER_BANDS)


@dataclass(frozen=True)
class Interval:
    low: float  # tokens/s per GPU
    high: float
    basis: str  # which held-out errors set it, and why it is wide where it is
    constrained: bool  # False: the layout uses a feature no measured point of its engine has
    basis_kind: str = HELD_OUT  # one of BASES


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
    return engine + WITH_KERNELS if layout.kernels else engine


def memory_margin(engine: str) -> MemoryMargin:
    """The margin of an engine, or of `margin_key`'s engine with kernels (the engine's own where none was measured)."""
    margins = {m["engine"]: m for m in stored()["memory_margins"]}
    return MemoryMargin(**margins.get(engine, margins[engine.removesuffix(WITH_KERNELS)]))


def layout_features(layout: Layout) -> frozenset[str]:
    """The parts of a layout that need a measured point of their own to be trusted."""
    return _features(layout.tp > 1, layout.pp > 1, layout.vpp > 1, layout.cp > 1, layout.ep > 1,
                     layout.offload_fraction > 0, layout.recompute)


@cache  # a few dozen combinations cover a request's thousands of layouts
def _features(tp: bool, pp: bool, vpp: bool, cp: bool, ep: bool, offload: bool, recompute: str) -> frozenset[str]:
    found = {name for name, on in (("TP > 1", tp), ("PP > 1", pp), ("VPP > 1", vpp), ("CP > 1", cp), ("EP > 1", ep),
                                   ("optimizer offload", offload)) if on}
    return frozenset(found | {f"{recompute} recompute"})


def precision_class(layout: Layout) -> str:
    """BF16, or low where the layout's GEMMs run in FP8, MXFP8 or NVFP4: their errors differ (docs/planning.md)."""
    return "low" if layout.low_precision or layout.float8 else "bf16"


# Scale bands by GPU count: one node, up to eight nodes, a pod, beyond.
BANDS = ((1, 8, "1-8"), (9, 64, "9-64"), (65, 1024, "65-1,024"), (1025, 2**20, "1,025+"))
# A range is the central share of a group's held-out errors (about 90% of held-out measurements inside it) ...
COVERAGE = 0.90
# ... of a group of at least this many points (docs/planning.md, "Ranges").
MIN_GROUP = 8
# ... or, for the points of one precision (BF16, or FP8/MXFP8/NVFP4) of the group, this many: their errors differ
# most (docs/planning.md), so a smaller group of the same precision beats a larger one that mixes them.
MIN_PRECISION_GROUP = 5
# Where the layout uses a feature no measured point of its engine has, the range is widened by this factor.
UNCONSTRAINED_WIDENING = 2.0


def band_of(gpus: int) -> str:
    return next(label for low, high, label in BANDS if low <= gpus <= high)


@cache
def _points(engine: str, variant: str | None = None, band: str | None = None,
            precision: str | None = None) -> tuple[HeldOutPoint, ...]:
    return tuple(p for p in stored_points() if p.engine == engine and variant in (None, p.variant)
                 and band in (None, band_of(p.gpus)) and precision in (None, p.precision))


def _central(errors: tuple[float, ...]) -> tuple[float, float]:
    """The central COVERAGE of the errors, widened to hold 0: (low, high). The quantiles are split conformal ones
    (each tail's level moved out by (n + 1) / n, numpy's linear quantiles): a new point falls inside the range of n
    earlier ones at least COVERAGE of the time, where the plain central share of n points holds less."""
    upper = min(1.0, (1 - (1 - COVERAGE) / 2) * (len(errors) + 1) / len(errors))
    low, high = np.quantile(errors, [1 - upper, upper])
    return min(float(low), 0.0), max(float(high), 0.0)


def interval(engine: str, variant: str, layout: Layout, tokens_per_s: float) -> Interval:
    """The range the held-out errors put around a prediction (measured = predicted / (1 + error)): the central 90% of
    the errors of the points whose basis it shares (range_basis)."""
    high, low, basis, kind, constrained = _error_bounds(engine, variant, band_of(layout.gpus),
                                                        layout_features(layout), precision_class(layout))
    return Interval(round(tokens_per_s / high, 1), round(tokens_per_s / low, 1), basis, constrained, kind)


def range_basis(engine: str, variant: str, band: str, precision: str, exclude: str | None = None,
                kind: str | None = None) -> tuple[str, tuple[float, ...], str]:
    """(basis, errors, where) of a prediction: the held-out errors of this engine's points on this variant and band
    where it has MIN_GROUP of them; else, where the variant has points of the engine, the errors of predicting a
    band with that band left out; else the errors of predicting a variant with that variant left out. Each in this
    band and precision where enough points share them. `exclude` leaves one point out and `kind` sets the basis
    (benchmarks/plan_ranges.py scores each point against a range it did not set)."""
    def errors(found: tuple[HeldOutPoint, ...], kind: str) -> tuple[float, ...]:
        return tuple(p.error_of(kind) for p in found if p.name != exclude)

    own = [p for p in _points(engine, variant) if p.name != exclude]
    kind = kind or (HELD_OUT if len(errors(_points(engine, variant, band), HELD_OUT)) >= MIN_GROUP else
                    OTHER_BANDS if own else OTHER_VARIANTS)
    scopes = ((_points(engine, variant, band, precision), f"on {variant} at {band} GPUs, {precision}"),
              (_points(engine, variant, band), f"on {variant} at {band} GPUs")) if kind == HELD_OUT else \
        ((_points(engine, None, band, precision), f"at {band} GPUs, {precision}"),
         (_points(engine, None, band), f"at {band} GPUs"), (_points(engine), "at every scale"))
    for found, where in scopes:
        if len(errors(found, kind)) >= (MIN_PRECISION_GROUP if where.endswith(precision) else MIN_GROUP):
            return kind, errors(found, kind), where
    return kind, errors(_points(engine), kind), "at every scale"


def _carried_note(engine: str, variant: str) -> str:
    from openrecipes.plan.constants import calibration
    from openrecipes.plan.variants import efficiency_source

    source = efficiency_source(calibration(), engine, variant)
    if source.own:
        return ""
    return (f"{variant} has no measured {engine} point of its own: its efficiency is {source.source}'s carried by "
            f"physics (sustained clock under its power, HBM bandwidth: x{source.ratio:.3f}); ")


@cache  # the same for every layout with these features: worked out once, not per layout
def _error_bounds(engine: str, variant: str, band: str, features: frozenset[str],
                  precision: str) -> tuple[float, float, str, str, bool]:
    """(1 + the high error, 1 + the low error, the basis, its kind, constrained): what predicted tokens/s are
    divided by."""
    kind, errors, where = range_basis(engine, variant, band, precision)
    low, high = _central(errors)
    basis = (f"{kind}: {_carried_note(engine, variant)}central {COVERAGE:.0%} of {len(errors)} {engine} points' "
             f"errors {where} ({low:+.1%} to {high:+.1%})")
    missing = sorted(features - set(stored()["measured_features"][engine]))
    if missing:
        basis += f"; no measured {engine} layout with {', '.join(missing)}: doubled"
        return 1 + high * UNCONSTRAINED_WIDENING, max(1 + low * UNCONSTRAINED_WIDENING, 0.05), basis, kind, False
    return 1 + high, 1 + low, basis, kind, True
