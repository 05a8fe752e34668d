"""The planner agrees with what the seed pages state: the gpt-oss logits figure, where recompute is needed,
and that GLM-5.2 on 64 x B200 fits only with CPU optimizer offload."""

from __future__ import annotations

from dataclasses import replace

import pytest
from layout_helpers import relaid

from openrecipes.plan.calibrate import measured_points, predict_point
from openrecipes.plan.constants import GIB
from openrecipes.plan.memory import logits_bytes
from openrecipes.plan.predict import context, predict_layout

GPTOSS_EP4 = "gpt-oss-20b/h200/attune-tp1-pp1-ep4"
GLM_B200 = ["glm-5.2-744b-a40b/b200/attune-tp4-pp2-cp4-mt16k", "glm-5.2-744b-a40b/b200/attune-tp4-pp2-cp4-mt12k",
            "glm-5.2-744b-a40b/b200/attune-tp4-pp2-cp8"]


@pytest.fixture(scope="module")
def points():
    return measured_points()


def test_fp32_logits_of_an_8192_token_gpt_oss_microbatch_are_6_14_gib():
    assert round(logits_bytes(8192, 201088) / GIB, 2) == 6.14


def _on(point, gpu_type, recompute):
    """The seed's layout with another GPU type or recompute policy."""
    moved = replace(point, request=replace(point.request, gpu_type=gpu_type, variant=None),
                    layout=relaid(point.layout, recompute=recompute))
    return predict_layout(context(moved.request), moved.layout)


def test_gpt_oss_tp1_pp1_ep4_dp8_fits_h200_without_recompute(points):
    point = points[GPTOSS_EP4]
    assert point.layout.recompute == "none" and point.layout.label == "TP1 PP1 EP4 DP8"
    assert predict_point(point).fits


def test_the_same_gpt_oss_layout_needs_recompute_on_h100_80gb(points):
    point = points[GPTOSS_EP4]
    assert not _on(point, "H100", "none").fits
    assert _on(point, "H100", "full").fits
    # the seed note's reason: the FP32 logits are part of what no longer fits
    assert _on(point, "H100", "none").memory.parts["logits"] >= logits_bytes(8192, 201088)


@pytest.mark.parametrize("slug", GLM_B200)
def test_glm_64_b200_layouts_fit_only_with_cpu_optimizer_offload(points, slug):
    point = points[slug]
    assert point.layout.levers.offload_fraction == 0.9
    with_offload = predict_point(point)
    without = predict_layout(context(point.request), relaid(point.layout, offload_fraction=0.0))
    assert with_offload.fits, with_offload.reason
    assert not without.fits, without.reason
    assert max(without.memory.parts, key=without.memory.parts.get) == "optimizer_states"
