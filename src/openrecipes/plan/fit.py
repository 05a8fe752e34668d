"""Fit calibration.yaml's fitted values jointly on measured points.

Every fitted value is one term's one number (an efficiency, a gain, a per-layer host cost). They are fitted at once
by Gauss-Newton least squares on each point's log(predicted / measured tokens/s), in log space (every value is
positive), each point weighted by the measurement's spread (`assumed.measurement_sigma`) and each value pulled
towards its prior with a spread of `assumed.prior_sigma`: a value that no point moves stays at its prior, so a fit
without a point (leave-one-out) is always defined.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from openrecipes.plan.constants import Calibration, calibration, calibration_document, prior_sigmas, priors
from openrecipes.plan.points import MeasuredPoint, SpeedPoint, reference_tables
from openrecipes.plan.predict import Context, context, predict_layout

MAX_ITERATIONS = 30
STEP_LIMIT = 1.0  # largest change of one log value per iteration: keeps early steps from overshooting
CONVERGED = 1e-7  # largest log change at which the fit stops
DERIVATIVE_STEP = 1e-4  # log step of the numerical derivatives
LINEAR_REFIT_STEPS = 3  # steps of a refit without one point on the linearised problem (it converges in one or two)


def _contexts(points: Sequence[MeasuredPoint]) -> list[Context]:
    tables = reference_tables()
    found: dict = {}
    return [found.setdefault(p.request, context(p.request, tables)) for p in points]


def _residuals(points: list[SpeedPoint], contexts: list[Context], base: Calibration, names: list[str],
               log_values: np.ndarray) -> np.ndarray:
    cal = base.with_values(dict(zip(names, np.exp(log_values), strict=True)))
    return np.array([math.log(predict_layout(replace(ctx, calibration=cal), p.layout).tokens_per_s_per_gpu
                              / p.tokens_per_s_per_gpu) for p, ctx in zip(points, contexts, strict=True)])


@dataclass(frozen=True)
class _Problem:
    """The least-squares problem of one set of points: what each Gauss-Newton step needs."""
    points: list[SpeedPoint]
    contexts: list[Context]
    base: Calibration
    names: list[str]  # the fitted values, in order
    prior_log: np.ndarray
    sigma: np.ndarray  # each value's prior spread (log units)
    noise: float  # a measurement's spread (log units)

    def residuals(self, log_values: np.ndarray) -> np.ndarray:
        return _residuals(self.points, self.contexts, self.base, self.names, log_values)

    def jacobian(self, log_values: np.ndarray, residual: np.ndarray) -> np.ndarray:
        jacobian = np.empty((len(self.points), len(self.names)))
        for j in range(len(self.names)):
            moved = log_values.copy()
            moved[j] += DERIVATIVE_STEP
            jacobian[:, j] = (self.residuals(moved) - residual) / DERIVATIVE_STEP
        return jacobian

    def step(self, log_values: np.ndarray, residual: np.ndarray, jacobian: np.ndarray,
             columns: np.ndarray | None = None) -> np.ndarray:
        """The Gauss-Newton step of these rows of the points (and every prior), in these values (`columns`; all
        of them when None)."""
        cols = np.arange(len(self.names)) if columns is None else columns
        sigma = self.sigma[cols]
        stacked = np.vstack([jacobian[:, cols] / self.noise, np.diag(1 / sigma)])
        target = -np.concatenate([residual / self.noise, (log_values[cols] - self.prior_log[cols]) / sigma])
        return np.clip(np.linalg.lstsq(stacked, target, rcond=None)[0], -STEP_LIMIT, STEP_LIMIT)

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
    for _ in range(MAX_ITERATIONS):
        residual = problem.residuals(log_values)
        step = problem.step(log_values, residual, problem.jacobian(log_values, residual))
        log_values = log_values + step
        if np.max(np.abs(step)) < CONVERGED:
            break
    return problem.calibration(log_values)


def refits_without_each(points: list[SpeedPoint], full: Calibration,
                        fixed: dict[str, float] | None = None) -> list[Calibration]:
    """For each point, the calibration refitted on every other point: Gauss-Newton steps from the fit on all of
    them (`full`), each step with the Jacobian of that fit less the point's row. Leaving one point of hundreds out
    moves each value a little, where the problem is close to linear: benchmarks/plan_loo.py compares these refits
    with exact ones (`fit` without the point) on every point."""
    problem = _problem(points, full, fixed)
    log_values = np.log([full.fitted_values()[n] for n in problem.names])
    residual = problem.residuals(log_values)
    jacobian = problem.jacobian(log_values, residual)
    refits = []
    for i in range(len(points)):
        keep = np.arange(len(points)) != i
        moved = log_values.copy()
        for _ in range(LINEAR_REFIT_STEPS):  # the residuals move with the values; the Jacobian is the full fit's
            shifted = residual[keep] + jacobian[keep] @ (moved - log_values)
            moved = moved + problem.step(moved, shifted, jacobian[keep])
        refits.append(problem.calibration(moved))
    return refits


def refits_without_groups(points: list[SpeedPoint], full: Calibration,
                          groups: Sequence[tuple[Sequence[int], frozenset[str]]]) -> list[Calibration]:
    """For each group (the indices of its points, the fitted values only they constrain), the calibration refitted
    without its points and without those values: Gauss-Newton steps from the fit on every point, as
    `refits_without_each`. A dropped efficiency is absent from the refit, so its variant's points are predicted as a
    variant never measured is: carried from a neighbour (openrecipes.plan.variants)."""
    problem = _problem(points, full, None)
    log_values = np.log([full.fitted_values()[n] for n in problem.names])
    residual = problem.residuals(log_values)
    jacobian = problem.jacobian(log_values, residual)
    refits = []
    for rows, dropped in groups:
        keep = np.ones(len(points), dtype=bool)
        keep[list(rows)] = False
        columns = np.array([j for j, name in enumerate(problem.names) if name not in dropped])
        moved = log_values.copy()
        for _ in range(LINEAR_REFIT_STEPS):
            shifted = residual[keep] + jacobian[keep][:, columns] @ (moved[columns] - log_values[columns])
            moved[columns] = moved[columns] + problem.step(moved, shifted, jacobian[keep], columns)
        refits.append(problem.calibration(moved).without(dropped))
    return refits
