"""Fit calibration.yaml's fitted values jointly on measured points.

Every fitted value is one term's one number (an efficiency, a gain, a per-layer host cost). They are fitted at once
by least squares (scipy's Levenberg-Marquardt) on each point's log(predicted / measured tokens/s), in log space
(every value is positive), each point weighted by the measurement's spread (`assumed.measurement_sigma`) and each
value pulled towards its prior with a spread of `assumed.prior_sigma`: a value that no point moves stays at its prior,
so a fit without a point (leave-one-out) is always defined.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
from scipy.optimize import least_squares

from openrecipes.plan.constants import Calibration, calibration, calibration_document, prior_sigmas, priors
from openrecipes.plan.points import MeasuredPoint, SpeedPoint, reference_tables
from openrecipes.plan.predict import Context, context, predict_layout

DERIVATIVE_STEP = 1e-4  # log step of the numerical derivatives
# least_squares stops when a step or the cost moves by less than this (relative): the fits are written with four
# significant digits, and the held-out errors with four decimals
TOLERANCE = 1e-12


def _contexts(points: Sequence[MeasuredPoint]) -> list[Context]:
    tables = reference_tables()
    found: dict = {}
    return [found.setdefault(p.request, context(p.request, tables)) for p in points]


@dataclass(frozen=True)
class _Problem:
    """The least-squares problem of one set of points: its residuals and their derivatives."""
    points: list[SpeedPoint]
    contexts: list[Context]
    base: Calibration
    names: list[str]  # the fitted values, in order
    prior_log: np.ndarray
    sigma: np.ndarray  # each value's prior spread (log units)
    noise: float  # a measurement's spread (log units)

    def residuals(self, log_values: np.ndarray) -> np.ndarray:
        cal = self.base.with_values(dict(zip(self.names, np.exp(log_values), strict=True)))
        return np.array([math.log(predict_layout(replace(ctx, calibration=cal), p.layout).tokens_per_s_per_gpu
                                  / p.tokens_per_s_per_gpu) for p, ctx in zip(self.points, self.contexts, strict=True)])

    def jacobian(self, log_values: np.ndarray, residual: np.ndarray) -> np.ndarray:
        jacobian = np.empty((len(self.points), len(self.names)))
        for j in range(len(self.names)):
            moved = log_values.copy()
            moved[j] += DERIVATIVE_STEP
            jacobian[:, j] = (self.residuals(moved) - residual) / DERIVATIVE_STEP
        return jacobian

    def weighted(self, residual: np.ndarray, log_values: np.ndarray, columns: np.ndarray) -> np.ndarray:
        """The points' residuals in measurement spreads, then each fitted value's distance from its prior in prior
        spreads (of the values `columns`)."""
        return np.concatenate([residual / self.noise,
                               (log_values[columns] - self.prior_log[columns]) / self.sigma[columns]])

    def solve(self, start: np.ndarray, residual: Callable[[np.ndarray], np.ndarray],
              jacobian: Callable[[np.ndarray], np.ndarray], columns: np.ndarray | None = None) -> np.ndarray:
        """The values minimising the weighted residuals, from `start`, moving only `columns` (all when None)."""
        cols = np.arange(len(self.names)) if columns is None else columns

        def moved(values: np.ndarray) -> np.ndarray:
            full = start.copy()
            full[cols] = values
            return full

        prior_rows = np.diag(1 / self.sigma[cols])
        found = least_squares(lambda v: self.weighted(residual(moved(v)), moved(v), cols), start[cols],
                              jac=lambda v: np.vstack([jacobian(moved(v))[:, cols] / self.noise, prior_rows]),
                              method="lm", xtol=TOLERANCE, ftol=TOLERANCE, gtol=TOLERANCE)
        return moved(found.x)

    def calibration(self, log_values: np.ndarray) -> Calibration:
        return self.base.with_values(dict(zip(self.names, (float(v) for v in np.exp(log_values)), strict=True)))


def _problem(points: list[SpeedPoint], start: Calibration | None, fixed: dict[str, float] | None) -> _Problem:
    prior = priors()
    names = [name for name in prior if name not in (fixed or {})]
    return _Problem(points, _contexts(points), (start or calibration()).with_values(fixed or {}), names,
                    np.log([prior[n] for n in names]), np.array([prior_sigmas()[n] for n in names]),
                    calibration_document()["assumed"]["measurement_sigma"])


def fit(points: list[SpeedPoint], start: Calibration | None = None,
        fixed: dict[str, float] | None = None) -> Calibration:
    """The calibration whose fitted values best predict these points' tokens/s (and their priors); `fixed` values
    are set, not fitted (benchmarks/plan_loo.py turns a term off this way)."""
    problem = _problem(points, start, fixed)
    log_values = np.log([problem.base.fitted_values()[n] for n in problem.names])
    return problem.calibration(problem.solve(
        log_values, problem.residuals, lambda values: problem.jacobian(values, problem.residuals(values))))


def refits_without_each(points: list[SpeedPoint], full: Calibration,
                        fixed: dict[str, float] | None = None) -> list[Calibration]:
    """For each point, the calibration refitted on every other point: the fit on the residuals linearised at the
    fit on all of them (`full`), with that fit's Jacobian less the point's row. Leaving one point of hundreds out
    moves each value a little, where the problem is close to linear: benchmarks/plan_loo.py compares these refits
    with exact ones (`fit` without the point) on every point."""
    return refits_without_groups(points, full, [([i], frozenset()) for i in range(len(points))], fixed)


def refits_without_groups(points: list[SpeedPoint], full: Calibration,
                          groups: Sequence[tuple[Sequence[int], frozenset[str]]],
                          fixed: dict[str, float] | None = None) -> list[Calibration]:
    """For each group (the indices of its points, the fitted values only they constrain), the calibration refitted
    without its points and without those values: linearised at the fit on every point, as `refits_without_each`. A
    dropped efficiency is absent from the refit, so its variant's points are predicted as a variant never measured
    is: carried from a neighbour (openrecipes.plan.variants)."""
    problem = _problem(points, full, fixed)
    log_values = np.log([full.fitted_values()[n] for n in problem.names])
    residual = problem.residuals(log_values)
    jacobian = problem.jacobian(log_values, residual)
    refits = []
    for rows, dropped in groups:
        keep = np.ones(len(points), dtype=bool)
        keep[list(rows)] = False
        columns = np.array([j for j, name in enumerate(problem.names) if name not in dropped])
        moved = _linear_refit(problem, log_values, residual[keep], jacobian[keep], columns)
        refits.append(problem.calibration(moved).without(dropped))
    return refits


def _linear_refit(problem: _Problem, at: np.ndarray, residual: np.ndarray, jacobian: np.ndarray,
                  columns: np.ndarray | None = None) -> np.ndarray:
    """The fit of these points' residuals as linear in the values about `at` (the fit on every point)."""
    return problem.solve(at, lambda values: residual + jacobian @ (values - at), lambda values: jacobian, columns)
