"""The convergence check: Megatron-Bridge's pipeline thresholds, its three holes closed, the strict verdict."""

from __future__ import annotations

import math

import pytest
from conftest import REPO

from openrecipes.errors import UserError
from openrecipes.thresholds import PIPELINE_CONVERGENCE, ConvergenceThresholds, LossBand
from openrecipes.verify.convergence import check_convergence, read_curve

SLIME_LOG = REPO / "tests/fixtures/logs/slime-gpt-oss-20b-attune-tp1-pp1-ep4.log"


def curve(steps: int = 20, start: float = 2.6, end: float = 1.2) -> dict[int, float]:
    """A decaying SFT-like loss curve over `steps` steps."""
    return {s: end + (start - end) * math.exp(-s / 5) + 0.01 * math.sin(3 * s) for s in range(steps)}


def test_identical_arms_pass_both_verdicts():
    reference = curve()
    verdict = check_convergence(dict(reference), reference)
    assert verdict["passed"] and verdict["failed_metrics"] == [] and verdict["reasons"] == []
    assert verdict["correlation"] == pytest.approx(1.0)
    assert verdict["final_loss_difference"] == 0 and verdict["pointwise_failures"] == 0
    assert verdict["steps"] == 20 and verdict["skipped_points"] == 4 and verdict["total_points"] == 16
    assert verdict["placement_only"]["passed"]


def test_reduction_noise_passes_strict_but_a_2_percent_shift_fails_it():
    reference = curve()
    noisy = {s: loss * (1 + 1e-4 * (-1) ** s) for s, loss in reference.items()}
    verdict = check_convergence(noisy, reference)
    assert verdict["passed"] and verdict["placement_only"]["passed"]
    shifted = {s: loss * 1.02 for s, loss in reference.items()}
    verdict = check_convergence(shifted, reference)
    assert verdict["passed"]  # within the pipeline's 5-10 % bands
    assert not verdict["placement_only"]["passed"] and verdict["placement_only"]["failing_steps"] == list(range(20))


def test_non_finite_loss_fails():  # upstream: NaN compares False everywhere and passes
    reference = curve()
    candidate = {**reference, 12: float("nan")}
    verdict = check_convergence(candidate, reference)
    assert not verdict["passed"] and "non_finite_loss" in verdict["failed_metrics"]
    assert "step 12 is nan" in verdict["reasons"][0]
    assert not verdict["placement_only"]["passed"]
    assert "non_finite_loss" in check_convergence(reference, {**reference, 3: float("inf")})["failed_metrics"]


def test_step_in_one_arm_only_fails():  # upstream: the missing step becomes NaN and passes
    reference = curve()
    candidate = {s: v for s, v in reference.items() if s != 15}
    verdict = check_convergence(candidate, reference)
    assert not verdict["passed"] and verdict["failed_metrics"] == ["step_mismatch"]
    assert "reference only: 15" in verdict["reasons"][0]
    assert not verdict["placement_only"]["passed"]


def test_constant_curve_fails():  # upstream: correlation NaN < 0.95 is False, so it passes
    reference = {s: 1.5 for s in range(20)}
    verdict = check_convergence(dict(reference), reference)
    assert not verdict["passed"] and verdict["failed_metrics"] == ["constant_curve"]
    assert verdict["correlation"] is None and "same value at every compared step" in verdict["reasons"][0]


def test_diverging_run_fails_correlation_pointwise_and_final_loss():
    reference = curve()
    diverged = {s: loss + 0.2 * s for s, loss in reference.items()}
    verdict = check_convergence(diverged, reference)
    assert not verdict["passed"]
    assert {"correlation", "point_wise_tolerance", "final_loss"} <= set(verdict["failed_metrics"])
    assert len(verdict["reasons"]) == len(verdict["failed_metrics"])


def test_final_loss_alone_fails_above_5_percent():
    reference = curve()
    candidate = {**reference, 19: reference[19] * 1.06}
    verdict = check_convergence(candidate, reference)
    assert verdict["failed_metrics"] == ["final_loss"]
    assert verdict["final_loss_difference"] == pytest.approx(0.06)


def test_pointwise_bands_follow_the_reference_loss():
    thresholds = PIPELINE_CONVERGENCE
    assert [thresholds.tolerance_for(loss) for loss in (3.0, 2.0, 1.0, 0.5, 0.2)] == [0.10, 0.05, 0.05, 0.02, 0.02]
    reference = {s: 3.0 - 0.05 * s for s in range(20)}  # every point above 2.0: the 10 % band
    within = check_convergence({s: v * 1.04 for s, v in reference.items()}, reference)
    assert within["pointwise_failures"] == 0
    low = {s: 0.45 - 0.01 * s for s in range(20)}  # every point at or below 0.5: the 2 % band
    outside = check_convergence({s: v * 1.04 for s, v in low.items()}, low)
    assert outside["pointwise_failures"] == 16 and "point_wise_tolerance" in outside["failed_metrics"]


def test_too_few_points_fail():
    reference = {0: 2.0, 1: 1.9}
    verdict = check_convergence(dict(reference), reference)
    assert verdict["failed_metrics"] == ["too_few_points"]


def test_log_against_csv(tmp_path):
    log_curve = read_curve(SLIME_LOG)
    csv = tmp_path / "reference.csv"
    csv.write_text("step,loss\n" + "".join(f"{s},{v!r}\n" for s, v in log_curve.items()))
    verdict = check_convergence(log_curve, read_curve(csv))
    assert verdict["passed"] and verdict["placement_only"]["passed"] and verdict["steps"] == 20


def test_steps_csv_of_a_run_is_read_by_its_header(tmp_path):
    # `openrecipes run` writes step,loss,step_time; the columns are read by name, the others ignored.
    steps = tmp_path / "steps.csv"
    steps.write_text("step,loss,step_time\n0,11.7,\n1,11.4,2.0\n2,11.1,2.0\n")
    assert read_curve(steps) == {0: 11.7, 1: 11.4, 2: 11.1}
    reordered = tmp_path / "curve.txt"
    reordered.write_text("step_time,loss,step\n,2.5,0\n1.0,2.25,1\n")
    assert read_curve(reordered) == {0: 2.5, 1: 2.25}


def test_pointwise_reason_states_the_thresholds_in_use():
    reference = {s: 3.0 - 0.1 * s for s in range(10)}
    candidate = {s: loss * 1.5 for s, loss in reference.items()}
    bands = (LossBand(above=1.0, relative_tolerance=0.25), LossBand(above=float("-inf"), relative_tolerance=0.01))
    verdict = check_convergence(candidate, reference, ConvergenceThresholds(loss_bands=bands))
    reason = next(r for r in verdict["reasons"] if "tolerance" in r)
    assert "25% for loss > 1, 1% below" in reason


@pytest.mark.parametrize("text, message", [
    ("step,loss\n0,1.0\n0,1.1\n", "step 0 is written twice"),
    ("step,loss\n0,abc\n", "expected 'step,loss'"),
    ("step,loss\n0,1.0,7\n", "curve.csv:2: 3 values for the 2 columns step,loss"),
    ("0,1.0,7\n", "curve.csv:1: 3 values for the 2 columns step,loss"),
    ("step,time\n0,1.0\n", "no 'loss' column"),
    ("step,loss\n", "no step,loss rows"),
])
def test_bad_csv_is_a_user_error(tmp_path, text, message):
    path = tmp_path / "curve.csv"
    path.write_text(text)
    with pytest.raises(UserError, match=message):
        read_curve(path)
