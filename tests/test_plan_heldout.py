"""Leave-one-out on every measured point: each point predicted with every fitted value refitted without it.

Pins the table benchmarks/RESULTS.md shows (benchmarks/plan_loo.py prints it): heldout.json is what the fit gives
now; every held-out error of our runs within 15%, the median of every point within 10%; rank agreement >= 0.8 within
every model and GPU type of our runs with at least four measured layouts; and the intervals and margin `plan` prints
come from it. The public record's entries are held to their own bars in tests/test_plan_public_record.py.
"""

from __future__ import annotations

import copy

import pytest
from conftest import REPO

from openrecipes.plan import heldout
from openrecipes.plan.trust import stored, stored_points

ERROR_BAR = 0.15
MEDIAN_BAR = 0.10
SPEARMAN_BAR = 0.8
# Points of ours allowed outside the bar, each documented in docs/planning.md with its reason: none since the
# Qwen3-0.6B and Qwen3-4B stock arms (eager selective AC) constrain the eager selective-AC host term that the one-row
# 1.7B layout alone used to need. The public record's entries (points of the fit too) are held to the record's own
# bars (tests/test_plan_public_record.py): NVIDIA's releases ran the same MoE layouts up to 1.8x apart.
# Known misses, each with its reason. The seeds' gpt-oss-20b PP 2 recipe on 8 x H200 (slime, MoE, BF16) shares the
# Megatron efficiency of the H200 with MLPerf's Llama 3.1 405B FP8 entries on 512 and 1,024 H200 (NeMo, dense), which
# ran faster than predicted and pull it up: held out, the recipe is predicted about 21% too fast (7.6% before those
# entries joined the fit). It stays inside its printed range; the fit has no separate term for the two yet.
# Compute by operator times a compiled FSDP step on 2 x H200 that keeps its parameters gathered 15% fast: its
# reshard-after-forward probe is the one run of ours past the bar (docs/planning.md says so).
KNOWN_MISSES: dict[str, tuple[float, float]] = {"gpt-oss-20b/h200/attune-tp1-pp2-ep4": (0.0, 0.25),
                                                "qwen3-8b-h200x2-compile-noac-mb1-reshard-probe": (0.0, 0.16)}
RECORD = "/record-"


@pytest.mark.slow  # every point refitted without itself, and one publisher and one part left out whole: about a minute
def test_the_stored_table_is_what_the_fit_gives_now_and_an_edited_figure_is_caught(monkeypatch):
    from openrecipes.catalog.store import load_catalog
    from openrecipes.tune.fingerprint import derived_inputs

    seal = derived_inputs(load_catalog(REPO))
    assert heldout.differs_on_a_sample(REPO, seal) is None, "stale: run `openrecipes refresh`"
    groups = heldout.sampled_groups(REPO, seal)
    edited = copy.deepcopy(stored())
    row = next(r for r in edited["points"] if r["source"] in groups)
    row["source_held_out"] *= 1.01
    monkeypatch.setattr(heldout, "stored", lambda: edited)
    assert heldout.differs_on_a_sample(REPO, seal) is not None


def test_every_held_out_error_of_our_runs_within_the_bar():
    for point in (p for p in stored_points() if RECORD not in p.name):
        low, high = KNOWN_MISSES.get(point.name, (-ERROR_BAR, ERROR_BAR))
        assert low <= point.error <= high, (point.name, point.error)


def test_median_held_out_error():
    assert heldout.median_abs_error(list(stored_points())) <= MEDIAN_BAR


def test_every_point_of_the_catalog_and_reference_points_is_held_out():
    from openrecipes.plan.calibrate import speed_points

    assert {p.name for p in stored_points()} == {p.slug for p in speed_points()}


def test_rank_agreement_within_each_model_and_gpu_of_our_runs():
    groups = stored()["rank_agreement"]
    assert {"qwen3-1.7b on H200", "qwen3-8b on H200"} <= set(groups)
    ours = {f"{p.model} on {p.gpu_type}" for p in stored_points() if RECORD not in p.name}
    for name, (count, rho) in ((n, g) for n, g in groups.items() if n in ours):
        assert count >= heldout.RANKED_GROUP and rho >= SPEARMAN_BAR, (name, rho)


def test_interval_is_wide_and_says_so_where_nothing_was_measured():
    from openrecipes.plan.predict import PlanRequest, predict

    measured = predict(PlanRequest("qwen3-8b", "H200", 2, 8192, 16, "torchtitan"))[0]
    unmeasured = predict(PlanRequest("qwen3-8b", "B200", 2, 8192, 16, "torchtitan"))[0]
    near, far = measured.interval, unmeasured.interval
    assert near.basis_kind == far.basis_kind == "left out with its source"
    assert "on parts its engine measured" in near.basis and "never measured" in far.basis
    assert "B200-SXM-180GB has no measured torchtitan point of its own" in far.basis


def test_ranges_are_set_without_the_point_and_never_pinned_to_it():
    """A range is what the alike points' errors say, not centred on the prediction nor stretched around it: where
    they were mostly predicted slow (or fast), the range lies almost wholly on one side of the prediction."""
    from openrecipes.plan.trust import Likeness, band_of, error_range, range_basis

    likenesses = {Likeness(p.covered, p.engine, p.precision, p.moe, band_of(p.gpus)) for p in stored_points()}
    ranges = [error_range(range_basis(likeness)[0]) for likeness in likenesses]
    assert any(max(-low, high) > 10 * min(-low, high) for low, high in ranges), ranges


def test_the_headline_scores_are_recomputed_from_the_stored_points():
    """docs/planning.md's leave-one-source-out headline, recomputed from heldout.json's points."""
    from openrecipes.plan.score import scorecard

    card = scorecard(list(stored_points()))
    headline = (f"| leave one source out | {card.errors.points} | {card.errors.median_abs_error:.1%} | "
                f"{card.errors.within_10:.0%} | {card.errors.within_20:.0%} | {card.inside:.0%} | "
                f"{card.median_width:.0%} |")
    assert headline in (REPO / "docs/planning.md").read_text(), headline
