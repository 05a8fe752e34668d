"""Calibration is named data fitted on the measured points: calibration.yaml records the fit, the host optimizer
rate is what our component test measured, and published peak memory (never fitted) lands near the prediction."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from openrecipes.catalog.hardware import load_reference_tables
from openrecipes.plan.calibrate import fitted_values, measured_points, predict_point
from openrecipes.plan.constants import calibration, calibration_document, priors
from openrecipes.plan.points import reference_rows
from openrecipes.plan.shape import model_shape

# The bar for peak memory.
MEMORY_TOLERANCE = 0.10
REPO = Path(__file__).resolve().parents[1]


def test_calibration_yaml_records_the_joint_fit():
    fits = fitted_values()
    recorded = {name: row["value"] for name, row in calibration_document()["fitted"].items()}
    assert set(fits) == set(recorded) == set(priors())
    for name, value in recorded.items():
        assert fits[name] == pytest.approx(value, rel=5e-3), name


def test_host_optimizer_rate_is_the_component_tests_measurement():
    """One H200's share of the host (16 cores) ran Adam on the offloaded parameters of a GLM-5.2 MoE layer shard:
    three steps, the offloaded arm's seconds less the on-GPU arm's."""
    doc = calibration_document()["measured"]["cpu_optimizer_params_per_s_per_gpu"]
    output = json.loads((REPO / doc["source"]).read_text())
    arms = {arm["name"]: arm["seconds"] for arm in output["arms"]}
    on_gpu = next(s for name, s in arms.items() if name.startswith("Adam on the accelerator"))
    offloaded = next(s for name, s in arms.items() if name.startswith("offloaded Adam"))
    rate = 3 * output["offloaded_parameters"] / (offloaded - on_gpu)
    assert calibration().cpu_optimizer_params_per_s_per_gpu == pytest.approx(rate, rel=5e-3)


def test_a_value_no_point_moves_stays_at_its_prior():
    from openrecipes.plan.fit import fit

    points = [p for p in measured_points().values() if p.tokens_per_s_per_gpu and p.layout.cp == 1]
    assert fit(points).cp_attention_efficiency == pytest.approx(priors()["cp_attention_efficiency"], rel=1e-3)


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


def test_a_reduced_depth_point_is_the_models_shape_cut_to_its_layers():
    """`layers: 4` of gpt-oss-20b is the 20b shape with 4 decoder layers: the parameter count torchtitan printed for
    that cut (runs/moe-gptoss-20b-h200x1, "4,451,017,664 total parameters"; the planner leaves out biases and
    attention sinks), and active parameters less the 20 removed layers' routed top-4, attention and router."""
    from openrecipes.plan.points import reduced_depth_name, reference_tables

    models = reference_tables().models
    full, cut = model_shape(models["gpt-oss-20b"]), model_shape(models[reduced_depth_name("gpt-oss-20b", 4)])
    assert cut.layers == 4 and cut.experts == full.experts and cut.hidden == full.hidden
    assert cut.total_params == pytest.approx(4_451_017_664, rel=1e-3)
    assert full.active_params - cut.active_params == 20 * (full.block_matmul_params // full.layers)
    points = [p for p in measured_points().values() if p.request.model == reduced_depth_name("gpt-oss-20b", 4)]
    assert len(points) == 5 and all(p.layout.stage_layers == (4,) for p in points)
