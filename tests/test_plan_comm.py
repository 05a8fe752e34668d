"""Communication on the topology: each collective costs latency + bytes / bandwidth on the level it crosses, ring or
tree as the group makes it; throughput falls with scale as the public record's sweeps do; Megatron-FSDP is its own
mechanism, whose record layouts fit."""

from __future__ import annotations

from dataclasses import replace

import pytest
from conftest import REPO
from layout_helpers import built

from openrecipes.catalog.hardware import load_reference_tables
from openrecipes.catalog.store import load_catalog
from openrecipes.plan.comm import (
    TREE_BANDWIDTH_SHARE,
    all_gather_s,
    all_reduce_s,
    all_to_all_s,
    network_bytes_per_s,
    nvlink_bytes_per_s,
    span,
)
from openrecipes.plan.constants import calibration, links
from openrecipes.plan.layouts import stage_split
from openrecipes.plan.predict import PlanRequest, context, predict_layout
from openrecipes.plan.public_record import record_points

H100 = links("H100-SXM5-80GB", load_reference_tables().variants["H100-SXM5-80GB"])
CAL = calibration()
GB = 1e9


def test_a_large_message_in_a_small_group_takes_the_ring_and_a_small_one_in_a_large_group_the_tree():
    cal = CAL
    group = span(8, 1, H100)  # one NVLink domain
    ring = cal.collective_base_latency_s + 14 * cal.nvlink_step_latency_s + 2 * 7 / 8 * GB / nvlink_bytes_per_s(
        H100, cal)
    assert all_reduce_s(GB, group, H100, cal) == pytest.approx(ring)
    wide = span(1024, 1, H100)  # 128 domains: the ring's 2,046 steps outweigh the tree's lost bandwidth
    tree = cal.collective_base_latency_s + 2 * (7 * cal.nvlink_step_latency_s + 7 * cal.network_step_latency_s) \
        + 2 * 1e6 / (TREE_BANDWIDTH_SHARE * network_bytes_per_s(H100, cal))
    assert all_reduce_s(1e6, wide, H100, cal) == pytest.approx(tree)


def test_latency_grows_with_the_group():
    tiny = 1e3  # bytes: the latency alone
    gathers = [all_gather_s(tiny, span(n, 1, H100), H100, CAL) for n in (2, 4, 8, 16, 64, 512)]
    assert gathers == sorted(gathers) and gathers[-1] > 10 * gathers[0]
    reduces = [all_reduce_s(tiny, span(n, 1, H100), H100, CAL) for n in (2, 8, 64, 512)]
    assert reduces == sorted(reduces)
    exchanges = [all_to_all_s(tiny, span(n, 1, H100), H100, CAL) for n in (2, 8, 64)]
    assert exchanges == sorted(exchanges)


def test_a_group_across_domains_runs_at_the_fabric():
    inside, across = span(8, 1, H100), span(16, 1, H100)
    assert inside.domains == 1 and across.domains == 2
    assert span(8, 2, H100).domains == 2  # eight ranks two apart span two 8-GPU domains
    no_latency = replace(CAL, collective_base_latency_s=0.0, nvlink_step_latency_s=0.0, network_step_latency_s=0.0)
    assert all_gather_s(GB, inside, H100, no_latency) == pytest.approx(7 / 8 * GB / nvlink_bytes_per_s(H100, CAL))
    assert all_gather_s(GB, across, H100, no_latency) == pytest.approx(15 / 16 * GB / network_bytes_per_s(H100, CAL))
    assert all_gather_s(GB, across, H100, CAL) > 5 * all_gather_s(GB, inside, H100, CAL)


def _megatron_fsdp_weak_scaling(gpus: int) -> float:
    """Llama 3.1 70B in FP8 on B200 under Megatron-FSDP over every GPU (TP 1, two 8,192-token rows a microbatch, full
    recompute, global batch 4 x GPUs): predicted tokens/s per GPU."""
    request = PlanRequest("llama-3.1-70b", "B200", gpus, 8192, 4 * gpus, "megatron", low_precision="fp8")
    layout = built("megatron", 1, 1, 1, 1, 1, 1, gpus, (80,), "full", 2, 16384, low_precision="fp8",
                   megatron_fsdp=True)
    return predict_layout(context(request), layout).tokens_per_s_per_gpu


def _record_weak_scaling(gpus: int) -> float:
    """The public record's Llama 3.1 70B FP8 sweep on H100 (NVIDIA dgxc-benchmarking v25.02: TP4 PP4 CP2 VP5, one
    8,192-token row a microbatch, global batch 2 x GPUs): predicted tokens/s per GPU."""
    request = PlanRequest("llama-3.1-70b", "H100", gpus, 8192, 2 * gpus, "megatron", low_precision="fp8")
    split = stage_split(80, 4)
    assert split is not None
    layout = built("megatron", 4, 4, 5, 2, 1, 1, gpus // 32, split, "none", 1, 4096, low_precision="fp8")
    return predict_layout(context(request), layout).tokens_per_s_per_gpu


@pytest.mark.parametrize("sweep, least_lost", [(_record_weak_scaling, 0.0), (_megatron_fsdp_weak_scaling, 0.01)])
def test_a_weak_scaling_sweep_loses_throughput_from_64_to_512_gpus(sweep, least_lost):
    # the data-parallel groups grow with the job, and their rings' latency steps with them: most where they sync
    # every layer of every microbatch (FSDP). The record's sweep published 1,566.8 to 1,522.25 tokens/s per GPU.
    predicted = [sweep(gpus) for gpus in (64, 128, 256, 512)]
    assert predicted == sorted(predicted, reverse=True) and len(set(predicted)) == len(predicted)
    assert predicted[-1] / predicted[0] - 1 < -least_lost


def test_megatron_fsdp_record_layouts_shard_every_state_and_the_8b_one_fits():
    points = {p.slug: p for p in record_points(load_catalog(REPO)) if p.layout.levers.megatron_fsdp}
    assert len(points) == 11  # the record's Megatron-Bridge FSDP entries (FSDP column above 0)
    eight_b = points["llama-3.1-8b/h100/record-mbridge-25.11-fp8cs-8gpu-fsdp8-gbs128-mbs1"]
    prediction = predict_layout(context(eight_b.request), eight_b.layout)
    assert prediction.fits
    assert "fsdp" in prediction.step.microbatch_comm_s and prediction.step.dp_s == 0.0
    seventy_b = points["llama-3.1-70b/gb200/record-mbridge-26.04-fp8-64gpu-fsdp64-gbs256-mbs2"]
    parts = predict_layout(context(seventy_b.request), seventy_b.layout).memory.parts_gib()
    # 70B parameters over 64 ranks: 18 B a parameter in all, not the distributed optimizer's replicated 6 B
    assert parts["weights"] + parts["gradients"] + parts["optimizer_states"] < 20
