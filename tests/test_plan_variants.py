"""`plan` on hardware variants: a type means the part a user rents, a variant id selects its part, an efficiency is
never averaged over two parts, and every row says what its range is calibrated on."""

from __future__ import annotations

import json

import pytest
from conftest import openrecipes

from openrecipes.catalog.hardware import load_reference_tables
from openrecipes.plan.constants import calibration
from openrecipes.plan.variants import efficiency, efficiency_source, physical_ratio

VARIANTS = load_reference_tables().variants


def test_a_power_cap_and_slower_hbm_carry_as_physics():
    # the 500 W cap sustains (500/700)^(1/3) of the clock; a fifth of the time scales with HBM (2.4 against 3.35 TB/s)
    share = calibration().memory_bound_share
    ratio = physical_ratio("H100-SXM-96GB-500W", "H100-SXM5-80GB", VARIANTS, share)
    assert ratio == pytest.approx(1 / ((1 - share) / (500 / 700) ** (1 / 3) + share * 3.35 / 2.4))
    assert physical_ratio("B200-SXM-180GB", "H100-SXM5-80GB", VARIANTS, share) == 1.0


def test_a_variant_without_points_is_carried_from_its_nearest_measured_part():
    cal = calibration()
    own = efficiency_source(cal, "torchtitan", "H100-SXM-96GB-500W")
    assert own.own and efficiency(cal, "torchtitan", "H100-SXM-96GB-500W") == \
        cal.compute_efficiency["torchtitan/H100-SXM-96GB-500W"]
    rented = efficiency_source(cal, "torchtitan", "H100-SXM5-80GB")
    assert not rented.own and rented.source == "H200-SXM-141GB"  # same clock and power; only HBM differs
    assert efficiency(cal, "torchtitan", "H100-SXM5-80GB") == pytest.approx(
        cal.compute_efficiency["torchtitan/H200-SXM-141GB"] * rented.ratio)
    assert "torchtitan" not in cal.compute_efficiency  # no engine-wide value averaged over parts


def _rows(*args):
    result = openrecipes("plan", "qwen3-1.7b", "--gpus", "1", "--engine", "torchtitan", "--global-batch", "16",
                         "--top", "3", "--json", *args)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_plan_h100_is_the_rented_sxm5_and_says_it_has_no_point_of_its_own():
    rows = _rows("--gpu", "H100")
    assert {r["variant"] for r in rows} == {"H100-SXM5-80GB"} and rows[0]["capacity_gib"] == 79.65
    for r in rows:
        assert "on parts its engine never measured" in r["interval"]["basis"]
        assert "H100-SXM5-80GB has no measured torchtitan point of its own" in r["interval"]["basis"]


def test_a_variant_id_selects_its_part():
    capped, rented = _rows("--gpu", "H100-SXM-96GB-500W")[0], _rows("--gpu", "H100")[0]
    assert capped["variant"] == "H100-SXM-96GB-500W" and capped["capacity_gib"] > rented["capacity_gib"]
    assert capped["tokens_per_s_per_gpu"] < rented["tokens_per_s_per_gpu"]
    assert "no measured torchtitan point of its own" not in capped["interval"]["basis"]


def test_measured_variant_rows_are_held_out_on_it():
    for r in _rows("--gpu", "H200"):
        assert r["variant"] == "H200-SXM-141GB" and "on parts its engine measured" in r["interval"]["basis"]


def test_the_table_names_the_variant_and_each_rows_basis():
    result = openrecipes("plan", "qwen3-1.7b", "--gpu", "h100", "--gpus", "1", "--engine", "torchtitan",
                         "--global-batch", "16", "--top", "2")
    assert result.returncode == 0, result.stderr
    text = " ".join(result.stdout.split())
    assert "1 x H100-SXM5-80GB" in text and "never measured" in text


def test_an_unknown_variant_exits_2_listing_the_known_ones():
    result = openrecipes("plan", "qwen3-1.7b", "--gpu", "H100-PCIe-40GB", "--gpus", "1")
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
    assert "H100-SXM5-80GB" in result.stderr and "H100-SXM-96GB-500W" in result.stderr


def test_emit_recipe_refuses_a_variant_no_instance_rents(tmp_path):
    result = openrecipes("plan", "qwen3-1.7b", "--gpu", "H100-SXM-96GB-500W", "--gpus", "1", "--engine", "torchtitan",
                         "--emit-recipe", "1", "--out", tmp_path / "planned.yaml")
    assert result.returncode == 2 and "plan --gpu H100" in result.stderr and not (tmp_path / "planned.yaml").exists()
