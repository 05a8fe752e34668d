"""The planner reads a part's probe (hardware/probes/<part>.json) in place of its datasheet: the GEMM efficiency and
HBM bandwidth a fit is carried between parts with, and the bus bandwidth collectives reach inside the domain."""

from __future__ import annotations

import pytest

from openrecipes.catalog.hardware import load_reference_tables
from openrecipes.plan import constants, variants
from openrecipes.plan.constants import calibration, links
from openrecipes.plan.predict import PlanRequest, predict
from openrecipes.probe.tables import CollectivePoint, CopyPoint, GemmPoint, ProbeTables

VARIANTS = load_reference_tables().variants
M, N, K = variants.PROBED_GEMM


def probe(part: str, efficiency: float, hbm_bytes_per_s: float, all_reduce_bytes_per_s: float) -> ProbeTables:
    return ProbeTables(
        part, gemm=(GemmPoint(M, N, K, "bf16", 1.0, efficiency * 989e12, efficiency),),
        attention=(), copies=(CopyPoint(2**32, 1.0, hbm_bytes_per_s),),
        collectives=(CollectivePoint("all_reduce", constants.PROBED_MESSAGE_BYTES, 8, 1.0, all_reduce_bytes_per_s),))


@pytest.fixture
def probed(monkeypatch):
    found = {"H100-SXM5-80GB": probe("H100-SXM5-80GB", 0.60, 3.0e12, 300e9),
             "H200-SXM-141GB": probe("H200-SXM-141GB", 0.75, 4.4e12, 360e9)}
    for module in (variants, constants):
        monkeypatch.setattr(module, "tables_for", lambda part, root: found.get(part))
    variants.carried.cache_clear()
    yield found
    variants.carried.cache_clear()


def test_two_probed_parts_carry_a_fit_by_their_measured_gemm_and_hbm(probed):
    share = calibration().memory_bound_share
    ratio = variants.physical_ratio("H100-SXM5-80GB", "H200-SXM-141GB", VARIANTS, share)
    assert ratio == pytest.approx(1 / ((1 - share) * 0.75 / 0.60 + share * 4.4 / 3.0))
    # without the probes, the two are one chip at the same power: only the datasheets' HBM differs
    variants.carried.cache_clear()
    probed.clear()
    assert variants.physical_ratio("H100-SXM5-80GB", "H200-SXM-141GB", VARIANTS, share) == pytest.approx(
        1 / ((1 - share) + share * 4.8 / 3.35))


def test_a_probed_bus_bandwidth_replaces_the_datasheet_link(probed):
    assert links("H100-SXM5-80GB", VARIANTS["H100-SXM5-80GB"]).measured_nvlink_bytes_per_s == 300e9
    assert links("B200-SXM-180GB", VARIANTS["B200-SXM-180GB"]).measured_nvlink_bytes_per_s is None


def test_a_slower_measured_link_slows_a_tensor_parallel_layout(monkeypatch):
    request = PlanRequest("qwen3-8b", "H200", 8, 8192, 128, "torchtitan")
    tp8 = [p for p in predict(request) if p.layout.tp == 8][0]
    slow = {"H200-SXM-141GB": probe("H200-SXM-141GB", 0.75, 4.4e12, 36e9)}
    monkeypatch.setattr(constants, "tables_for", lambda part, root: slow.get(part))
    again = next(p for p in predict(request) if p.layout == tp8.layout)
    assert again.step.microbatch_comm_s["tp"] > 5 * tp8.step.microbatch_comm_s["tp"]
