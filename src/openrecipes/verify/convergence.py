"""The convergence check: Megatron-Bridge's `validate_convergence` on two loss curves, with its silent passes fixed.

Upstream compares numpy arrays in which a NaN loss, a step missing from one arm (filled with NaN) or a constant
curve (correlation NaN) make every comparison False, so the check passes. Here each of them fails, with a reason.
A second, strict verdict says whether the arms agree step for step, as a placement-only change must.
"""

from __future__ import annotations

import csv
import itertools
import math
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from openrecipes.errors import UserError
from openrecipes.measure.formats import read_log
from openrecipes.textfile import iter_lines, shown
from openrecipes.thresholds import (
    PIPELINE_CONVERGENCE,
    PLACEMENT_ONLY,
    ConvergenceThresholds,
    PlacementOnlyTolerance,
)
from openrecipes.verdict import Finding

LossCurve = dict[int, float]  # step (from 0) -> loss

_CSV_COLUMNS = ("step", "loss")  # the columns a curve needs; others (steps.csv's step_time) are ignored


def _csv_header(row: list[str]) -> list[str]:
    return [name.strip().lower() for name in row]


def _csv_curve(path: Path, rows) -> LossCurve:  # noqa: ANN001 (a csv reader)
    """A CSV whose header names a `step` and a `loss` column, in any order among others; without a header, the two
    columns step,loss."""
    first: list[str] = next((row for row in rows if row), [])
    header = _csv_header(first)
    pending: list[list[str]] = []
    if not set(_CSV_COLUMNS) <= set(header):
        if not first or not first[0].strip().lstrip("-").isdigit():
            missing = [name for name in _CSV_COLUMNS if name not in header]
            raise UserError(f"{shown(path)}:{rows.line_num}: the header names no {' or '.join(map(repr, missing))} "
                            "column; the first line must name the columns, e.g. 'step,loss'")
        header, pending = list(_CSV_COLUMNS), [first]  # no header: the first row is data
    at = {name: header.index(name) for name in _CSV_COLUMNS}
    curve: LossCurve = {}
    for values in itertools.chain(pending, rows):
        if not values:
            continue
        where = f"{shown(path)}:{rows.line_num}"
        if len(values) > len(header):
            raise UserError(f"{where}: {len(values)} values for the {len(header)} columns {','.join(header)[:80]}")
        try:
            step, loss = int(values[at["step"]]), float(values[at["loss"]])
        except (IndexError, ValueError):
            raise UserError(f"{where}: expected 'step,loss' values (an integer and a number), got "
                            f"{','.join(values)[:80]!r}") from None
        if step in curve:
            raise UserError(f"{where}: step {step} is written twice; keep one")
        if curve and step < next(reversed(curve)):
            raise UserError(f"{where}: step {step} comes after step {next(reversed(curve))}; write the rows in step "
                            "order")
        curve[step] = loss
    if not curve:
        raise UserError(f"{shown(path)}: no step,loss rows")
    return curve


def read_curve(path: Path) -> LossCurve:
    """A loss curve from a CSV with step and loss columns (a run's steps.csv) or from any training log `measure`
    reads; either is read as a stream."""
    path = Path(path)
    first = next((line for line in iter_lines(path) if line.strip()), "")
    if path.suffix.lower() == ".csv" or set(_CSV_COLUMNS) <= set(_csv_header(first.split(","))):
        rows = csv.reader(iter_lines(path))
        try:
            return _csv_curve(path, rows)
        except csv.Error as error:  # a field over csv's size limit or a broken quote
            raise UserError(f"{shown(path)}:{rows.line_num}: not a readable CSV line ({error})") from None
    curve = {step.step: step.loss for step in read_log(path).steps if step.loss is not None}  # each step once
    if not curve:
        raise UserError(f"{shown(path)}: the log has no loss values")
    return curve


def _bands_text(thresholds: ConvergenceThresholds) -> str:
    """The pointwise tolerance bands in words: '10% for loss > 2, 5% for loss > 0.5, 2% below'."""
    return ", ".join(f"{band.relative_tolerance:.0%} " + (f"for loss > {band.above:g}" if math.isfinite(band.above)
                                                          else "below") for band in thresholds.loss_bands)


def _steps_text(steps: list[int]) -> str:
    shown = ", ".join(map(str, steps[:5]))
    return shown + (f" and {len(steps) - 5} more" if len(steps) > 5 else "")


def _exponent(*values: float) -> int:
    """The binary exponent of the largest |value|: multiplying by 2**-exponent (np.ldexp, exact: no rounding, and
    2**-exponent is never formed) brings every value into [-1, 1], so no difference, product or sum of squares below
    can overflow to Inf (and Inf - Inf to NaN)."""
    largest = max((abs(float(v)) for v in values), default=0.0)
    return math.frexp(largest)[1]


def _relative_difference(candidate: float, reference: float) -> float:
    """|candidate - reference| / |reference| (|candidate| when the reference is 0), on scaled values: ±1e308 losses
    give a huge difference, never Inf or NaN."""
    if reference == 0:
        return abs(float(candidate))
    exponent = _exponent(candidate, reference)
    c, r = math.ldexp(candidate, -exponent), math.ldexp(reference, -exponent)
    return abs(c - r) / abs(r) if r != 0 else sys.float_info.max


def _correlation(candidate: np.ndarray, reference: np.ndarray) -> float | None:
    """Pearson's correlation of two curves, each scaled exactly into [-1, 1] first (correlation does not change
    with scale); None when it is undefined (a curve whose variation vanishes at double precision)."""
    a = np.ldexp(candidate, -_exponent(*candidate))
    b = np.ldexp(reference, -_exponent(*reference))
    da, db = a - a.mean(), b - b.mean()
    denominator = math.sqrt(float(np.dot(da, da))) * math.sqrt(float(np.dot(db, db)))
    if not denominator > 0 or not math.isfinite(denominator):
        return None
    return max(-1.0, min(1.0, float(np.dot(da, db)) / denominator))


def _outliers(candidate: np.ndarray, reference: np.ndarray, sigmas: float) -> int:
    """Residuals further than `sigmas` standard deviations from their mean (a scale-free count, so on scaled
    values)."""
    exponent = _exponent(*candidate, *reference)
    residuals = np.ldexp(candidate, -exponent) - np.ldexp(reference, -exponent)
    return int(np.sum(np.abs(residuals - residuals.mean()) > sigmas * residuals.std()))


def _placement_only(candidate: LossCurve, reference: LossCurve, common: list[int], sound: bool,
                    tolerance: PlacementOnlyTolerance) -> dict:
    failing = [
        step for step in common
        if abs(candidate[step] - reference[step]) > tolerance.absolute + tolerance.relative * abs(reference[step])
    ]
    return {
        "passed": sound and bool(common) and not failing,
        "failing_steps": failing,
        "tolerance": f"|candidate - reference| <= {tolerance.absolute:g} + {tolerance.relative:g} * |reference| at "
                     "every step",
    }


def check_convergence(
    candidate: LossCurve,
    reference: LossCurve,
    thresholds: ConvergenceThresholds = PIPELINE_CONVERGENCE,
    placement_tolerance: PlacementOnlyTolerance = PLACEMENT_ONLY,
) -> dict:
    """The verdict as `check convergence --json` prints it: the figures, then each failed rule's metric in
    `failed_metrics` and its reason with the fix in `reasons` (a pass has none)."""
    findings = [*_step_rules(candidate, reference)]
    common = sorted(s for s in set(candidate) & set(reference)
                    if math.isfinite(candidate[s]) and math.isfinite(reference[s]))
    skipped = int(len(common) * thresholds.skip_first_fraction)
    scored = common[skipped:]
    result: dict[str, Any] = {
        "passed": False,
        "correlation": None,
        "final_loss_difference": None,
        "pointwise_failures": None,
        "total_points": len(scored),
        "failed_metrics": [],
        "reasons": [],
        "steps": len(common),
        "skipped_points": skipped,
        "placement_only": _placement_only(candidate, reference, common, not findings, placement_tolerance),
    }
    if len(scored) < thresholds.min_points:
        findings.append(Finding("too_few_points", thresholds.min_points, len(scored),
                                f"only {len(scored)} comparable points after skipping the first "
                                f"{thresholds.skip_first_fraction:.0%}; at least {thresholds.min_points} are needed"))
    else:
        findings += _curve_rules(scored, np.array([candidate[s] for s in scored]),
                                 np.array([reference[s] for s in scored]), thresholds, result)
    result["failed_metrics"] = [finding.field for finding in findings]
    result["reasons"] = [finding.message for finding in findings]
    result["passed"] = not findings
    return result


def _step_rules(candidate: LossCurve, reference: LossCurve) -> Iterator[Finding]:
    """Both arms log the same steps, every loss finite."""
    only_candidate = sorted(set(candidate) - set(reference))
    only_reference = sorted(set(reference) - set(candidate))
    if only_candidate or only_reference:
        yield Finding.at("step_mismatch", "the arms log different steps (candidate only: "
                         f"{_steps_text(only_candidate) or 'none'}; reference only: "
                         f"{_steps_text(only_reference) or 'none'}); run both arms for the same steps and log every "
                         "step")
    non_finite = [(arm, step, curve[step]) for arm, curve in (("candidate", candidate), ("reference", reference))
                  for step in sorted(curve) if not math.isfinite(curve[step])]
    if non_finite:
        arm, step, value = non_finite[0]
        yield Finding("non_finite_loss", None, value, f"the {arm}'s loss at step {step} is {value}" + (
            f" ({len(non_finite) - 1} more non-finite losses)" if len(non_finite) > 1 else "") +
            "; a run that produces NaN or Inf has diverged")


def _curve_rules(scored: list[int], cand: np.ndarray, ref: np.ndarray, thresholds: ConvergenceThresholds,
                 result: dict[str, Any]) -> Iterator[Finding]:
    """Megatron-Bridge's metrics on the scored points, each against its threshold; the figures go into `result`."""
    flat = [arm for arm, values in (("candidate", cand), ("reference", ref)) if values.max() == values.min()]
    if flat:
        yield Finding.at("constant_curve", f"the {' and the '.join(flat)} loss is the same value at every compared "
                         "step; a constant curve has no correlation (a run that did not train, or a log that "
                         "repeats one value)")
    else:
        correlation = result["correlation"] = _correlation(cand, ref)
        if correlation is None:
            yield Finding.at("correlation", "the curves' correlation is undefined (a curve varies by less than double "
                             "precision resolves); a curve that does not move cannot show convergence")
        elif not correlation >= thresholds.min_correlation:
            yield Finding("correlation", thresholds.min_correlation, correlation, f"the curves' correlation "
                          f"{correlation:.6f} is below {thresholds.min_correlation}")

    pointwise = [s for s, c, r in zip(scored, cand, ref, strict=True)
                 if _relative_difference(c, r) > thresholds.tolerance_for(r)]
    result["pointwise_failures"] = len(pointwise)
    if len(pointwise) / len(scored) > thresholds.max_pointwise_failure_ratio:
        yield Finding("point_wise_tolerance", thresholds.max_pointwise_failure_ratio, len(pointwise) / len(scored),
                      f"{len(pointwise)} of {len(scored)} points (steps {_steps_text(pointwise)}) differ from the "
                      f"reference by more than its tolerance ({_bands_text(thresholds)}); at most "
                      f"{thresholds.max_pointwise_failure_ratio:.0%} may")

    final = _relative_difference(cand[-1], ref[-1])
    result["final_loss_difference"] = float(final)
    if not final <= thresholds.max_final_loss_difference:
        yield Finding("final_loss", thresholds.max_final_loss_difference, float(final), f"the final losses (step "
                      f"{scored[-1]}: {cand[-1]:.6g} vs {ref[-1]:.6g}) differ by {final:.2%}, more than "
                      f"{thresholds.max_final_loss_difference:.0%}")

    outliers = _outliers(cand, ref, thresholds.outlier_sigmas)
    if outliers / len(scored) > thresholds.max_outlier_ratio:
        yield Finding("outliers", thresholds.max_outlier_ratio, outliers / len(scored), f"{outliers} of "
                      f"{len(scored)} residuals lie beyond {thresholds.outlier_sigmas:g} sigma; at most "
                      f"{thresholds.max_outlier_ratio:.0%} may")
    figures = {"correlation": result["correlation"], "final_loss_difference": final}
    broken = [name for name, value in figures.items() if value is not None and not math.isfinite(value)]
    if broken:  # cannot happen on scaled values; if it ever does, NaN must fail, never pass
        yield Finding.at("non_finite_figure", f"the {' and '.join(broken)} came out non-finite; the curves cannot be "
                         "compared")
