"""The convergence check: Megatron-Bridge's `validate_convergence` on two loss curves, with its silent passes fixed.

Upstream compares numpy arrays in which a NaN loss, a step missing from one arm (filled with NaN) or a constant
curve (correlation NaN) make every comparison False, so the check passes. Here each of them fails, with a reason.
A second, strict verdict says whether the arms agree step for step, as a placement-only change must.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np

from openrecipes.errors import UserError
from openrecipes.measure.formats import read_log, read_text
from openrecipes.measure.steps import require_unique_steps
from openrecipes.verify.thresholds import (
    PIPELINE_CONVERGENCE,
    PLACEMENT_ONLY,
    ConvergenceThresholds,
    PlacementOnlyTolerance,
)

LossCurve = dict[int, float]  # step (from 0) -> loss

_CSV_COLUMNS = ("step", "loss")  # the columns a curve needs; others (steps.csv's step_time) are ignored


def _csv_header(row: list[str]) -> list[str]:
    return [name.strip().lower() for name in row]


def _read_csv(path: Path, lines: list[str]) -> LossCurve:
    """A CSV whose header names a `step` and a `loss` column, in any order among others; without a header, the two
    columns step,loss."""
    rows = csv.reader(lines)
    first = next((row for row in rows if row), [])
    header = _csv_header(first)
    if not set(_CSV_COLUMNS) <= set(header):
        if not first or not first[0].strip().lstrip("-").isdigit():
            missing = [name for name in _CSV_COLUMNS if name not in header]
            raise UserError(f"{path}:{rows.line_num}: the header names no {' or '.join(map(repr, missing))} column; "
                            "the first line must name the columns, e.g. 'step,loss'")
        header, rows = list(_CSV_COLUMNS), csv.reader(lines)  # no header: read the first row as data
    at = {name: header.index(name) for name in _CSV_COLUMNS}
    curve: LossCurve = {}
    for values in rows:
        if not values:
            continue
        number = rows.line_num
        if len(values) > len(header):
            raise UserError(f"{path}:{number}: {len(values)} values for the {len(header)} columns "
                            f"{','.join(header)}")
        try:
            step, loss = int(values[at["step"]]), float(values[at["loss"]])
        except (IndexError, ValueError):
            raise UserError(f"{path}:{number}: expected 'step,loss' values (an integer and a number), got "
                            f"{','.join(values)!r}") from None
        if step in curve:
            raise UserError(f"{path}:{number}: step {step} is written twice; keep one")
        curve[step] = loss
    if not curve:
        raise UserError(f"{path}: no step,loss rows")
    return curve


def read_curve(path: Path) -> LossCurve:
    """A loss curve from a CSV with step and loss columns (a run's steps.csv) or from any training log `measure`
    reads."""
    path = Path(path)
    lines = read_text(path).splitlines()
    first = next((line for line in lines if line.strip()), "")
    if path.suffix.lower() == ".csv" or set(_CSV_COLUMNS) <= set(_csv_header(first.split(","))):
        return _read_csv(path, lines)
    table = read_log(path)
    require_unique_steps(table)
    curve = {step.step: step.loss for step in table.steps if step.loss is not None}
    if not curve:
        raise UserError(f"{path}: the log has no loss values")
    return curve


def _bands_text(thresholds: ConvergenceThresholds) -> str:
    """The pointwise tolerance bands in words: '10% for loss > 2, 5% for loss > 0.5, 2% below'."""
    return ", ".join(f"{band.relative_tolerance:.0%} " + (f"for loss > {band.above:g}" if math.isfinite(band.above)
                                                          else "below") for band in thresholds.loss_bands)


def _steps_text(steps: list[int]) -> str:
    shown = ", ".join(map(str, steps[:5]))
    return shown + (f" and {len(steps) - 5} more" if len(steps) > 5 else "")


def _relative_difference(candidate: float, reference: float) -> float:
    return abs(candidate - reference) / abs(reference) if reference != 0 else abs(candidate)


def _placement_only(candidate: LossCurve, reference: LossCurve, common: list[int], sound: bool,
                    tolerance: PlacementOnlyTolerance) -> dict:
    failing = [
        step for step in common
        if abs(candidate[step] - reference[step]) > tolerance.absolute + tolerance.relative * abs(reference[step])
    ]
    return {
        "passed": sound and bool(common) and not failing,
        "failing_steps": failing,
        "tolerance": f"|candidate - reference| <= {tolerance.absolute:g} + {tolerance.relative:g} * |reference| "
                     "at every step",
    }


def check_convergence(
    candidate: LossCurve,
    reference: LossCurve,
    thresholds: ConvergenceThresholds = PIPELINE_CONVERGENCE,
    placement_tolerance: PlacementOnlyTolerance = PLACEMENT_ONLY,
) -> dict:
    failed, reasons = [], []
    only_candidate = sorted(set(candidate) - set(reference))
    only_reference = sorted(set(reference) - set(candidate))
    if only_candidate or only_reference:
        failed.append("step_mismatch")
        reasons.append(
            f"the arms log different steps (candidate only: {_steps_text(only_candidate) or 'none'}; reference "
            f"only: {_steps_text(only_reference) or 'none'}); run both arms for the same steps and log every step"
        )
    non_finite = [(arm, step, curve[step]) for arm, curve in (("candidate", candidate), ("reference", reference))
                  for step in sorted(curve) if not math.isfinite(curve[step])]
    if non_finite:
        failed.append("non_finite_loss")
        arm, step, value = non_finite[0]
        reasons.append(f"the {arm}'s loss at step {step} is {value}" + (
            f" ({len(non_finite) - 1} more non-finite losses)" if len(non_finite) > 1 else "") +
            "; a run that produces NaN or Inf has diverged")

    common = sorted(s for s in set(candidate) & set(reference)
                    if math.isfinite(candidate[s]) and math.isfinite(reference[s]))
    skipped = int(len(common) * thresholds.skip_first_fraction)
    scored = common[skipped:]
    result = {
        "passed": False,
        "correlation": None,
        "final_loss_difference": None,
        "pointwise_failures": None,
        "total_points": len(scored),
        "failed_metrics": failed,
        "reasons": reasons,
        "steps": len(common),
        "skipped_points": skipped,
        "placement_only": _placement_only(candidate, reference, common, not failed, placement_tolerance),
    }
    if len(scored) < thresholds.min_points:
        failed.append("too_few_points")
        reasons.append(f"only {len(scored)} comparable points after skipping the first "
                       f"{thresholds.skip_first_fraction:.0%}; at least {thresholds.min_points} are needed")
        return result

    cand = np.array([candidate[s] for s in scored])
    ref = np.array([reference[s] for s in scored])
    flat = [arm for arm, values in (("candidate", cand), ("reference", ref)) if np.ptp(values) == 0]
    if flat:
        failed.append("constant_curve")
        reasons.append(f"the {' and the '.join(flat)} loss is the same value at every compared step; a constant "
                       "curve has no correlation (a run that did not train, or a log that repeats one value)")
    else:
        correlation = float(np.corrcoef(cand, ref)[0, 1])
        result["correlation"] = correlation
        if correlation < thresholds.min_correlation:
            failed.append("correlation")
            reasons.append(f"the curves' correlation {correlation:.6f} is below {thresholds.min_correlation}")

    pointwise = [s for s, c, r in zip(scored, cand, ref)
                 if _relative_difference(c, r) > thresholds.tolerance_for(r)]
    result["pointwise_failures"] = len(pointwise)
    if len(pointwise) / len(scored) > thresholds.max_pointwise_failure_ratio:
        failed.append("point_wise_tolerance")
        reasons.append(f"{len(pointwise)} of {len(scored)} points (steps {_steps_text(pointwise)}) differ from the "
                       f"reference by more than its tolerance ({_bands_text(thresholds)}); at most "
                       f"{thresholds.max_pointwise_failure_ratio:.0%} may")

    final = _relative_difference(cand[-1], ref[-1])
    result["final_loss_difference"] = float(final)
    if final > thresholds.max_final_loss_difference:
        failed.append("final_loss")
        reasons.append(f"the final losses (step {scored[-1]}: {cand[-1]:.6g} vs {ref[-1]:.6g}) differ by "
                       f"{final:.2%}, more than {thresholds.max_final_loss_difference:.0%}")

    residuals = cand - ref
    outliers = int(np.sum(np.abs(residuals - residuals.mean()) > thresholds.outlier_sigmas * residuals.std()))
    if outliers / len(scored) > thresholds.max_outlier_ratio:
        failed.append("outliers")
        reasons.append(f"{outliers} of {len(scored)} residuals lie beyond {thresholds.outlier_sigmas:g} sigma; at "
                       f"most {thresholds.max_outlier_ratio:.0%} may")
    result["passed"] = not failed
    return result
