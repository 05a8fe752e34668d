"""The planner against our own torchtitan 0.2.2 runs on H200 (reference_points.yaml own_runs, 2026-11-30): the
recipes' runs and the 19-layout Qwen3-1.7B sweep of benchmarks/tune_vs_sweep.py.

Pins the agreement benchmarks/RESULTS.md claims: each point's figures are what its log gives over its window; peak
memory (torchtitan's max reserved, against the prediction minus the runtime reserve) within 10% on every point but
one documented over-prediction, none of it fitted; tokens/s from two fitted values (calibration.yaml torchtitan/H200
on the 8B stock run, amp_composite_norm_s_per_element on the 1.7B stock run), every other point held out within 9%
but two documented misses; Spearman >= 0.8 over every layout and within Qwen3-1.7B, and the documented miss within
Qwen3-8B.
"""

from __future__ import annotations

import pytest

from openrecipes.plan.calibrate import log_figures, measured_points, predict_point, reference_rows
from openrecipes.plan.constants import calibration, calibration_document
from openrecipes.plan.accuracy import allocator_gib, spearman

OWN_RUNS = [row for row in reference_rows() if "log" in row]
# The bar for peak memory.
MEMORY_TOLERANCE = 0.10
# Over-predicted, documented in RESULTS.md: with recompute under torch.compile the predicted peak grows faster with
# the microbatch than the measured one (+2.8% at MB1 ... +12.9% at MB8 for full AC); on the safe side.
KNOWN_MEMORY_MISSES = {"qwen3-1.7b-h200-sweep-full-mb8-compile": (1.10, 1.15)}
# The largest held-out tokens/s error but one (+8.9%, Qwen3-1.7B compile no-AC MB1).
SPEED_TOLERANCE = 0.09
# The bar for rank agreement.
SPEARMAN_TARGET = 0.8
# Held out and missed, documented in RESULTS.md: eager selective AC at one row a microbatch ran 21% below MB2
# (19,608 against 24,844 tokens/s), a per-microbatch cost the planner does not model; context parallelism costs
# more than the planner's half-exposed KV all-gather (torchtitan's ring attention over the load-balanced split).
KNOWN_SPEED_MISSES = {"qwen3-1.7b-h200-sweep-selective-mb1-eager": (1.15, 1.30),
                      "qwen3-8b-h200x2-sweep-cp2-none-mb1-compile": (1.05, 1.15)}
# Within Qwen3-8B (6 layouts) the rank agreement misses: CP2 is over-predicted and the compiled layouts run 3-8%
# faster than the eager-fitted efficiency (torch.compile's speed is not modelled): documented in RESULTS.md.
KNOWN_SPEARMAN_MISSES = {"qwen3-8b": (0.6, 0.8)}
CALIBRATION = calibration_document()
FITTED_ON = {CALIBRATION["compute_efficiency"]["torchtitan/H200"]["fitted_on"],
             CALIBRATION["amp_composite_norm_s_per_element"]["fitted_on"]}


def _predicted(name: str) -> tuple[float, float]:
    prediction = predict_point(measured_points()[name])
    return prediction.tokens_per_s_per_gpu, allocator_gib(prediction.memory.total_gib, calibration().runtime_reserve_gib)


@pytest.mark.parametrize("row", OWN_RUNS, ids=lambda row: row["name"])
def test_own_run_figures_are_what_its_log_gives(row):
    tokens_per_s, memory = log_figures(row)
    assert tokens_per_s == pytest.approx(row["tokens_per_s_per_gpu"], abs=0.01)
    assert memory == row["memory_gib"]


@pytest.mark.parametrize("row", OWN_RUNS, ids=lambda row: row["name"])
def test_own_run_peak_memory_within_tolerance(row):
    _, memory = _predicted(row["name"])
    low, high = KNOWN_MEMORY_MISSES.get(row["name"], (1 - MEMORY_TOLERANCE, 1 + MEMORY_TOLERANCE))
    assert low <= memory / row["memory_gib"] <= high, (row["name"], memory)


def test_every_own_run_but_the_fitted_ones_is_held_out():
    held_out = set(CALIBRATION["compute_efficiency"]["torchtitan/H200"]["held_out"]) | set(
        CALIBRATION["amp_composite_norm_s_per_element"]["held_out"])
    assert held_out == {row["name"] for row in OWN_RUNS} - FITTED_ON


@pytest.mark.parametrize("row", [r for r in OWN_RUNS if r["name"] not in FITTED_ON], ids=lambda row: row["name"])
def test_held_out_own_run_tokens_per_s(row):
    ratio = _predicted(row["name"])[0] / row["tokens_per_s_per_gpu"]
    low, high = KNOWN_SPEED_MISSES.get(row["name"], (1 - SPEED_TOLERANCE, 1 + SPEED_TOLERANCE))
    assert low <= ratio <= high, (row["name"], ratio)


@pytest.mark.parametrize("model", [None, "qwen3-1.7b", "qwen3-8b"])
def test_spearman_of_predicted_and_measured_tokens_per_s(model):
    rows = [row for row in OWN_RUNS if model in (None, row["model"])]
    predicted = [_predicted(row["name"])[0] for row in rows]
    low, high = KNOWN_SPEARMAN_MISSES.get(model, (SPEARMAN_TARGET, 1.0))
    assert low <= spearman(predicted, [row["tokens_per_s_per_gpu"] for row in rows]) <= high
