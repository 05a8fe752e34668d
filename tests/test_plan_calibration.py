"""Calibration is named data derived from named measured points, and held-out points land near measurement.

Fitted (speed only): Megatron's compute efficiency on gpt-oss-20b TP1 PP1 EP4 (8 x H200), the host optimizer
rate on GLM-5.2 TP4 PP2 CP4 max 16k (64 x B200), torchtitan's compute efficiency on torchtitan's published
Llama 3.1 8B FSDP 8 run. Held out: the points calibration.yaml lists. Memory is never fitted: every published
peak is a check.
"""

from __future__ import annotations

import pytest

from openrecipes.catalog.hardware import load_reference_tables
from openrecipes.plan.calibrate import fitted_values, measured_points, predict_point, reference_rows
from openrecipes.plan.constants import calibration, calibration_document
from openrecipes.plan.shape import model_shape

# Held-out tokens/s may differ from measurement by this much (the memory bar, applied to speed).
HELD_OUT_TOLERANCE = 0.10
# The bar for peak memory.
MEMORY_TOLERANCE = 0.10


def test_calibration_yaml_records_the_fits_of_its_named_points():
    doc = calibration_document()
    fits = fitted_values()
    for engine, row in doc["compute_efficiency"].items():
        assert fits[f"compute_efficiency.{engine}"] == pytest.approx(row["value"], rel=5e-3), engine
    assert fits["cpu_optimizer_params_per_s_per_gpu"] == pytest.approx(
        doc["cpu_optimizer_params_per_s_per_gpu"]["value"], rel=5e-3)
    assert fits["amp_composite_norm_s_per_element"] == pytest.approx(
        doc["amp_composite_norm_s_per_element"]["value"], rel=5e-3)


def _fitted() -> set[str]:
    doc = calibration_document()
    return {row["fitted_on"] for row in doc["compute_efficiency"].values()} | {
        doc[name]["fitted_on"] for name in ("cpu_optimizer_params_per_s_per_gpu", "amp_composite_norm_s_per_element")}


def _held_out() -> list[str]:
    """The points calibration.yaml names as held out (a recipe added later joins when the fits are redone)."""
    doc = calibration_document()
    rows = [*doc["compute_efficiency"].values(), doc["cpu_optimizer_params_per_s_per_gpu"],
            doc["amp_composite_norm_s_per_element"]]
    return sorted({slug for row in rows for slug in row["held_out"]})


def test_no_point_is_both_fitted_and_held_out():
    assert _fitted().isdisjoint(_held_out()) and set(_held_out()) | _fitted() <= set(measured_points())


# Our own H200 runs have their own bounds, one a documented miss: tests/test_plan_h200_accuracy.py.
OWN_H200_ROW = "torchtitan/H200"


@pytest.mark.parametrize("slug", sorted(set(_held_out()) - set(calibration_document()["compute_efficiency"][OWN_H200_ROW]["held_out"])
                                        - set(calibration_document()["amp_composite_norm_s_per_element"]["held_out"])))
def test_held_out_tokens_per_s_within_tolerance(slug):
    point = measured_points()[slug]
    predicted = predict_point(point).tokens_per_s_per_gpu
    assert abs(predicted / point.tokens_per_s_per_gpu - 1) <= HELD_OUT_TOLERANCE, (slug, predicted)


# Our own H200 runs' memory, one a documented miss, is pinned in tests/test_plan_h200_accuracy.py.
@pytest.mark.parametrize("name", sorted(n for n, p in measured_points().items() if p.memory_gib
                                        and n not in {row["name"] for row in reference_rows() if "log" in row}))
def test_published_peak_memory_within_tolerance(name):
    """The allocator's peak is what torchtitan publishes: compare without the runtime reserve."""
    point = measured_points()[name]
    predicted = predict_point(point).memory.total_gib - calibration().runtime_reserve_gib
    assert abs(predicted / point.memory_gib - 1) <= MEMORY_TOLERANCE, (name, predicted)


def test_parameter_counts_match_the_published_totals():
    models = load_reference_tables().models
    # OpenAI: gpt-oss-20b has 21B parameters (20.9B in its model card); GLM-5: 744B.
    assert model_shape(models["gpt-oss-20b"]).total_params == pytest.approx(20.9e9, rel=0.01)
    assert model_shape(models["GLM-5.2-744B-A40B"]).total_params == pytest.approx(744e9, rel=0.01)
