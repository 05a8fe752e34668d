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
# Where nothing of an engine was measured on a GPU type, or a layout uses a feature no measured point of its engine
# has, the interval is the central share (COVERAGE) of the engine's held-out errors widened by this factor.
UNCONSTRAINED_WIDENING = 2.0
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

    @property
    def error(self) -> float:
        return self.held_out / self.measured - 1


@dataclass(frozen=True)
class MemoryMargin:
    engine: str
    margin: float  # share of the predicted allocator peak a layout must leave free
    basis: str


@dataclass(frozen=True)
class Interval:
    low: float  # tokens/s per GPU
    high: float
    basis: str  # which held-out errors set it, and why it is wide where it is
    constrained: bool  # False: no measured point of this engine on this GPU type, or a feature none has


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


@cache
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


# Scale bands by GPU count: a prediction's range comes from the held-out errors of its engine, GPU type and band.
BANDS = ((1, 8, "1-8"), (9, 64, "9-64"), (65, 2**20, "65+"))
# A range is the central share of a group's held-out errors (about 90% of held-out measurements inside it) ...
COVERAGE = 0.90
# ... of the narrowest group with at least this many points: engine, GPU type and band; else engine and band over
# every GPU type; else the engine and GPU type.
MIN_GROUP = 8


def band_of(gpus: int) -> str:
    return next(label for low, high, label in BANDS if low <= gpus <= high)


@cache
def _errors(engine: str, gpu_type: str | None, band: str | None = None) -> tuple[float, ...]:
    return tuple(p.error for p in stored_points() if p.engine == engine and gpu_type in (None, p.gpu_type)
                 and band in (None, band_of(p.gpus)))


def _central(errors: tuple[float, ...]) -> tuple[float, float]:
    """The central COVERAGE of the errors (numpy's linear quantiles), widened to hold 0: (low, high)."""
    tail = (1 - COVERAGE) / 2
    low, high = np.quantile(errors, [tail, 1 - tail])
    return min(float(low), 0.0), max(float(high), 0.0)


def interval(engine: str, gpu_type: str, layout: Layout, tokens_per_s: float) -> Interval:
    """The range the held-out errors put around a prediction (measured = predicted / (1 + error)): the central 90% of
    the errors of the narrowest group with enough points (MIN_GROUP); wider, the central 90% of the engine's errors
    on every GPU type doubled, where fewer than two points of the engine were measured on this GPU type or the layout
    uses a feature no measured point of the engine has."""
    high, low, basis, constrained = _error_bounds(engine, gpu_type, band_of(layout.gpus), layout_features(layout))
    return Interval(round(tokens_per_s / high, 1), round(tokens_per_s / low, 1), basis, constrained)


def _group(engine: str, gpu_type: str, band: str) -> tuple[tuple[float, ...], str]:
    for errors, where in ((_errors(engine, gpu_type, band), f"on {gpu_type} at {band} GPUs"),
                          (_errors(engine, None, band), f"on every GPU type at {band} GPUs")):
        if len(errors) >= MIN_GROUP:
            return errors, where
    return _errors(engine, gpu_type), f"on {gpu_type}"


@cache  # the same for every layout with these features: worked out once, not per layout
def _error_bounds(engine: str, gpu_type: str, band: str, features: frozenset[str]) -> tuple[float, float, str, bool]:
    """(1 + the high error, 1 + the low error, the basis, constrained): what predicted tokens/s are divided by."""
    errors, same = _errors(engine, None), _errors(engine, gpu_type)
    missing = sorted(features - set(stored()["measured_features"][engine]))
    reasons = []
    if len(same) < 2:
        reasons.append(f"{len(same) or 'no'} measured {engine} run{'' if len(same) == 1 else 's'} on {gpu_type}")
    if missing:
        reasons.append(f"no measured {engine} layout with {', '.join(missing)}")
    if reasons:
        low, high = _central(errors)
        basis = (f"{'; '.join(reasons)}: the central {COVERAGE:.0%} of {engine}'s held-out errors on every GPU type "
                 f"({len(errors)} points, {low:+.1%} to {high:+.1%}) doubled")
        return 1 + high * UNCONSTRAINED_WIDENING, max(1 + low * UNCONSTRAINED_WIDENING, 0.05), basis, False
    group, where = _group(engine, gpu_type, band)
    low, high = _central(group)
    return (1 + high, 1 + low, f"central {COVERAGE:.0%} of the held-out errors of {len(group)} measured {engine} "
            f"points {where} ({low:+.1%} to {high:+.1%})", True)
