"""The planner against our own torchtitan 0.2.2 runs on H200 (reference_points.yaml own_runs, 2026-11-30).

Pins the agreement benchmarks/RESULTS.md claims: each point's figures are what its log gives over its window;
peak memory (torchtitan's max reserved, against the prediction minus the runtime reserve) within 6% on every
point, none of it fitted; tokens/s fitted on one point (calibration.yaml `torchtitan/H200`), the compiled points
held out within 7%; Spearman >= 0.8 over every layout and within each model.
"""

from __future__ import annotations

import pytest

from openrecipes.plan.calibrate import log_figures, measured_points, predict_point, reference_rows
from openrecipes.plan.constants import calibration, calibration_document
from openrecipes.plan.memory import MemoryEstimate

OWN_RUNS = [row for row in reference_rows() if "log" in row]
# The largest peak-memory error over the own runs, as RESULTS.md records it (+5.3%, compile + selective AC).
MEMORY_TOLERANCE = 0.06
# The largest held-out tokens/s error of a compiled run (+6.5%, Qwen3-1.7B compile no-AC MB2).
COMPILED_TOLERANCE = 0.07
# The bar for rank agreement.
SPEARMAN_TARGET = 0.8
# Held out and missed, documented in RESULTS.md: eager Qwen3-1.7B runs at 2/3 of the 8B-fitted efficiency (its
# unfused norms and small matmuls are not modelled), so the planner over-predicts it by about half.
KNOWN_SPEED_MISSES = {"qwen3-1.7b/h200/torchtitan-stock": (1.0, 1.6)}
FITTED_ON = calibration_document()["compute_efficiency"]["torchtitan/H200"]["fitted_on"]


def spearman(xs: list[float], ys: list[float]) -> float:
    """Spearman's rank correlation: Pearson's over average ranks (ties share their mean rank)."""
    def ranks(values: list[float]) -> list[float]:
        order = sorted(values)
        return [order.index(v) + (order.count(v) + 1) / 2 for v in values]
    rx, ry = ranks(xs), ranks(ys)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    return cov / (sum((a - mx) ** 2 for a in rx) * sum((b - my) ** 2 for b in ry)) ** 0.5


def allocator_gib(memory: MemoryEstimate, runtime_reserve_gib: float) -> float:
    """The predicted peak without the runtime reserve: what torchtitan's `memory:` (the caching allocator's max
    reserved) and its published Memory(GiB) measure, neither of which holds the CUDA context or NCCL's buffers."""
    return memory.total_gib - runtime_reserve_gib


def _predicted(name: str) -> tuple[float, float]:
    prediction = predict_point(measured_points()[name])
    return prediction.tokens_per_s_per_gpu, allocator_gib(prediction.memory, calibration().runtime_reserve_gib)


@pytest.mark.parametrize("row", OWN_RUNS, ids=lambda row: row["name"])
def test_own_run_figures_are_what_its_log_gives(row):
    tokens_per_s, memory = log_figures(row)
    assert tokens_per_s == pytest.approx(row["tokens_per_s_per_gpu"], abs=0.01)
    assert memory == row["memory_gib"]


@pytest.mark.parametrize("row", OWN_RUNS, ids=lambda row: row["name"])
def test_own_run_peak_memory_within_tolerance(row):
    _, memory = _predicted(row["name"])
    assert abs(memory / row["memory_gib"] - 1) <= MEMORY_TOLERANCE, (row["name"], memory)


def test_every_own_run_but_the_fitted_one_is_held_out():
    held_out = set(calibration_document()["compute_efficiency"]["torchtitan/H200"]["held_out"])
    assert held_out == {row["name"] for row in OWN_RUNS} - {FITTED_ON}


@pytest.mark.parametrize("row", [r for r in OWN_RUNS if r["name"] != FITTED_ON], ids=lambda row: row["name"])
def test_held_out_own_run_tokens_per_s(row):
    ratio = _predicted(row["name"])[0] / row["tokens_per_s_per_gpu"]
    low, high = KNOWN_SPEED_MISSES.get(row["name"], (1 - COMPILED_TOLERANCE, 1 + COMPILED_TOLERANCE))
    assert low <= ratio <= high, (row["name"], ratio)


@pytest.mark.parametrize("model", [None, "qwen3-1.7b", "qwen3-8b"])
def test_spearman_of_predicted_and_measured_tokens_per_s(model):
    rows = [row for row in OWN_RUNS if model in (None, row["model"])]
    predicted = [_predicted(row["name"])[0] for row in rows]
    assert spearman(predicted, [row["tokens_per_s_per_gpu"] for row in rows]) >= SPEARMAN_TARGET
