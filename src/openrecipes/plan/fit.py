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
from dataclasses import replace

import numpy as np

from openrecipes.plan.calibrate import MeasuredPoint, SpeedPoint, reference_tables
from openrecipes.plan.constants import Calibration, calibration, calibration_document, priors
from openrecipes.plan.predict import Context, context, predict_layout

MAX_ITERATIONS = 30
STEP_LIMIT = 1.0  # largest change of one log value per iteration: keeps early steps from overshooting
CONVERGED = 1e-7  # largest log change at which the fit stops
DERIVATIVE_STEP = 1e-4  # log step of the numerical derivatives


def _contexts(points: Sequence[MeasuredPoint]) -> list[Context]:
    tables = reference_tables()
    found: dict = {}
    return [found.setdefault(p.request, context(p.request, tables)) for p in points]


def _residuals(points: list[SpeedPoint], contexts: list[Context], base: Calibration, names: list[str],
               log_values: np.ndarray) -> np.ndarray:
    cal = base.with_values(dict(zip(names, np.exp(log_values), strict=True)))
    return np.array([math.log(predict_layout(replace(ctx, calibration=cal), p.layout).tokens_per_s_per_gpu
                              / p.tokens_per_s_per_gpu) for p, ctx in zip(points, contexts, strict=True)])


def fit(points: list[SpeedPoint], start: Calibration | None = None,
        fixed: dict[str, float] | None = None) -> Calibration:
    """The calibration whose fitted values best predict these points' tokens/s (and their priors); `fixed` values
    are set, not fitted (benchmarks/plan_loo.py turns a term off this way)."""
    base = (start or calibration()).with_values(fixed or {})
    prior = priors()
    names = [name for name in prior if name not in (fixed or {})]
    prior_log = np.log([prior[n] for n in names])
    assumed = calibration_document()["assumed"]
    sigma, noise = assumed["prior_sigma"], assumed["measurement_sigma"]
    log_values = np.log([base.fitted_values()[n] for n in names])
    contexts = _contexts(points)
    for _ in range(MAX_ITERATIONS):
        residual = _residuals(points, contexts, base, names, log_values)
        jacobian = np.empty((len(points), len(names)))
        for j in range(len(names)):
            moved = log_values.copy()
            moved[j] += DERIVATIVE_STEP
            jacobian[:, j] = (_residuals(points, contexts, base, names, moved) - residual) / DERIVATIVE_STEP
        stacked = np.vstack([jacobian / noise, np.eye(len(names)) / sigma])
        target = -np.concatenate([residual / noise, (log_values - prior_log) / sigma])
        step = np.linalg.lstsq(stacked, target, rcond=None)[0]
        step = np.clip(step, -STEP_LIMIT, STEP_LIMIT)
        log_values = log_values + step
        if np.max(np.abs(step)) < CONVERGED:
            break
    return base.with_values(dict(zip(names, (float(v) for v in np.exp(log_values)), strict=True)))
