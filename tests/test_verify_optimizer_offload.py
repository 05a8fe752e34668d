"""The optimizer-offload component test at the small shape on CPU: real arms within bounds, controls caught."""

from __future__ import annotations

import pytest

from openrecipes.errors import UserError
from openrecipes.thresholds import OPTIMIZER_OFFLOAD


@pytest.fixture(scope="module")
def optimizer_offload(torch):
    from openrecipes.verify.components import optimizer_offload

    return optimizer_offload


@pytest.fixture(scope="module")
def verdict(optimizer_offload):
    return optimizer_offload.run("small", "cpu")


def test_offloaded_adam_matches_the_fp64_reference(verdict):
    assert verdict["passed"] and verdict["reasons"] == []
    real = [arm for arm in verdict["arms"] if not arm["control"]]
    assert len(real) == 2
    for arm in real:
        assert arm["within_bounds"]
        assert arm["after_one_step"]["worst_error"] <= OPTIMIZER_OFFLOAD.after_one_step
        assert arm["after_three_steps"]["worst_error"] <= OPTIMIZER_OFFLOAD.after_three_steps
    assert verdict["detail"].startswith("worst tensor (update) relative L2 error")
    assert verdict["detail"].endswith("the negative controls fail")


def test_every_negative_control_is_caught(verdict):
    controls = {arm["name"]: arm for arm in verdict["arms"] if arm["control"]}
    assert len(controls) == 3 and all(not arm["within_bounds"] and arm["passed"] for arm in controls.values())
    beta2 = next(arm for name, arm in controls.items() if "beta2" in name)
    # Bias correction cancels beta2 after one step: only the three-step bound can see it.
    assert beta2["after_one_step"]["worst_error"] <= OPTIMIZER_OFFLOAD.after_one_step
    assert beta2["after_three_steps"]["worst_error"] > OPTIMIZER_OFFLOAD.after_three_steps


def test_the_offload_fraction_is_honoured(verdict):
    assert verdict["offloaded_parameters"] <= 0.9 * verdict["parameters"]
    assert verdict["offloaded_parameters"] > 0.7 * verdict["parameters"]


def test_an_uncaught_control_fails_the_test(monkeypatch, optimizer_offload):
    monkeypatch.setattr(optimizer_offload, "WRONG_BETA2", optimizer_offload.ENTRY.beta2)  # the "fault" is no fault
    verdict = optimizer_offload.run("small", "cpu")
    assert not verdict["passed"] and "was not caught" in verdict["reasons"][0]
    assert verdict["detail"].endswith("a negative control was NOT caught")


def test_bad_requests_are_user_errors(torch, optimizer_offload):
    with pytest.raises(UserError, match="unknown"):
        optimizer_offload.run("huge", "cpu")
    if not torch.cuda.is_available():
        with pytest.raises(UserError, match="no CUDA device"):
            optimizer_offload.run("small", "cuda")


def test_glm5_shape_is_one_ep8_ranks_shard(torch, optimizer_offload):
    shape = optimizer_offload.SHAPES["glm5-moe-layer"]
    tensors = optimizer_offload.tensor_shapes(shape)
    parameters = sum(torch.Size(dims).numel() for _, dims in tensors)
    assert shape.experts_total // shape.experts_held == 8
    assert parameters == 256 * 6144 + 32 * 3 * 6144 * 2048  # the router and 32 experts: ~1.21 G parameters
