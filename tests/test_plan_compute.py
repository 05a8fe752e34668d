"""Compute by operator: a microbatch's GEMMs, attention and memory-bound work (plan/ops.py), timed on a part's peak
per precision, a shape-dependent efficiency and its HBM bandwidth (plan/compute.py); a low precision has a predicted
gain on a part where no run of it stands, and the row says the gain is the datasheet's."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from layout_helpers import relaid

from openrecipes import figures
from openrecipes.catalog.hardware import load_reference_tables
from openrecipes.catalog.yamlio import parse_yaml
from openrecipes.engines.registry import engine_named
from openrecipes.errors import UserError
from openrecipes.plan import compute
from openrecipes.plan.compute import Part, compute_time, gemm_efficiency
from openrecipes.plan.constants import CALIBRATION_FILE, calibration, calibration_problems
from openrecipes.plan.layouts import Layout
from openrecipes.plan.ops import Attention, Gemm, Ops, layer_ops
from openrecipes.plan.predict import PlanRequest, predict
from openrecipes.plan.shape import model_shape
from openrecipes.probe.tables import CopyPoint, GemmPoint, ProbeTables

TABLES = load_reference_tables()
H100 = Part("H100-SXM5-80GB", TABLES.variants["H100-SXM5-80GB"], None)
ROW = 8192


def _layout(shape, **degrees) -> Layout:
    fields = {"tp": 1, "pp": 1, "cp": 1, "ep": 1, "etp": 1, "dp": 1, "recompute": "none"} | degrees
    return Layout(engine="megatron", vpp=1, stage_layers=(shape.layers,), rows_per_microbatch=1,
                  max_tokens_per_gpu=ROW, levers=engine_named("megatron").levers_of(), **fields)


def _flops(ops: Ops) -> float:
    return ops.gemm_flops + ops.attention.flops


def test_a_dense_layers_flops_are_6n_and_attention_less_the_embedding_lookup():
    shape = model_shape(TABLES.models["llama-3.1-8b"])
    ops = layer_ops(shape, _layout(shape), ROW, ROW)
    expected = ROW * figures.training_flops_per_token(
        figures.matmul_params(shape.active_params, shape.vocab, shape.hidden, shape.untied_embeddings),
        shape.attention_flops_per_token(ROW))
    assert _flops(ops) == pytest.approx(expected, rel=1e-3)
    # TP splits every GEMM and attention over its ranks; full recompute adds one forward of the blocks
    assert _flops(layer_ops(shape, _layout(shape, tp=4), ROW, ROW)) == pytest.approx(expected / 4, rel=1e-3)
    full = layer_ops(shape, _layout(shape, recompute="full"), ROW, ROW)
    head = next(g for g in ops.gemms if g.name == "output head").flops
    assert full.gemm_flops - head == pytest.approx((ops.gemm_flops - head) * 4 / 3)
    assert full.memory_bytes["norms"] > ops.memory_bytes["norms"]


def test_a_moe_layer_multiplies_its_active_experts_only():
    shape = model_shape(TABLES.models["mixtral-8x7b"])
    routed = sum(g.flops for g in layer_ops(shape, _layout(shape), ROW, ROW).gemms if g.grouped)
    assert routed == pytest.approx(ROW * 6 * shape.router_topk * shape.expert_params * shape.moe_layers)
    # EP spreads the experts: a GPU holds experts/EP of them, each with EP times the tokens
    spread = [g for g in layer_ops(shape, _layout(shape, ep=4), ROW, ROW).gemms if g.grouped]
    assert sum(g.flops for g in spread) == pytest.approx(routed)
    assert spread[0].m == pytest.approx(ROW * shape.router_topk * 4 / shape.experts)


def _one_gemm(m: int, n: int, k: int) -> Ops:
    return Ops((Gemm("linear", m, n, k, 3, True),), Attention(0.0, ROW, 128, 1, 0.0), {})


def test_fp8_gains_the_peak_ratio_on_large_gemms_and_less_on_small_ones():
    cal = replace(calibration(), gemm_efficiency_ceiling={"bf16": 0.8, "fp8": 0.8},
                  low_precision_efficiency={"fp8": 1.0})
    peak_ratio = H100.spec.peak_fp8_flops / H100.spec.peak_bf16_flops

    def gain(m: int, n: int, k: int) -> float:
        ops = _one_gemm(m, n, k)
        return compute_time(ops, H100, None, cal, "megatron").total_s / \
            compute_time(ops, H100, "fp8", cal, "megatron").total_s

    # its casts (HBM bytes ~ n^2) fall behind its FLOPs (~ n^3) as the GEMM grows
    assert gain(65536, 65536, 65536) == pytest.approx(peak_ratio, rel=0.05)
    assert gain(8192, 8192, 8192) < gain(65536, 65536, 65536) < peak_ratio
    assert gain(512, 1024, 1024) < 0.8 * peak_ratio


def test_a_gemms_efficiency_rises_with_its_smallest_dimension_towards_the_ceiling():
    cal = calibration()
    small, large = (gemm_efficiency(Gemm("g", m, m, m, 1, False), H100, "bf16", cal) for m in (64, 16384))
    assert small < large < cal.gemm_efficiency_ceiling["bf16"]
    assert large == pytest.approx(cal.gemm_efficiency_ceiling["bf16"], rel=0.02)


def test_a_probe_of_the_part_replaces_the_datasheet_curves():
    probe = ProbeTables("H100-SXM5-80GB", gemm=(GemmPoint(4096, 4096, 4096, "bf16", 1.0, 0.0, 0.42),),
                        attention=(), copies=(CopyPoint(2**32, 1.0, 1.0e12),), collectives=())
    probed = replace(H100, probe=probe)
    gemm = Gemm("g", 64, 64, 64, 1, False)
    assert gemm_efficiency(gemm, probed, "bf16", calibration()) == pytest.approx(0.42)
    assert compute.hbm_bytes_per_s(probed, calibration()) == 1.0e12
    assert not compute.measured(probed, "fp8")  # no FP8 GEMM in the probe: its FP8 gain is the datasheet's
    ops = Ops((), Attention(0.0, ROW, 128, 1, 0.0), {"norms": 1.0e12})
    assert compute_time(ops, probed, None, calibration(), "megatron").memory_s["norms"] == pytest.approx(1.0)


def _best(request: PlanRequest):
    return predict(request)[0]


def test_torchtitan_float8_on_a_part_without_a_run_of_it_is_faster_and_says_the_datasheet():
    bf16 = _best(PlanRequest("llama-3.1-8b", "H100", 8, 8192, 64, "torchtitan"))
    fp8 = next(p for p in predict(PlanRequest("llama-3.1-8b", "H100", 8, 8192, 64, "torchtitan",
                                              float8="tensorwise"))
               if relaid(p.layout, float8=None) == bf16.layout)
    assert fp8.tokens_per_s_per_gpu > 1.15 * bf16.tokens_per_s_per_gpu
    assert fp8.step.datasheet_precision == "fp8" and "float8 tensorwise" not in fp8.step.unmeasured_levers
    assert "timed at the datasheet's FP8 peak: predicted, not measured on H100-SXM5-80GB" in fp8.reason
    # on H200 a pair of our runs measured it: the measured factor times it, not the datasheet
    measured = _best(PlanRequest("qwen3-1.7b", "H200", 1, 8192, 16, "torchtitan", float8="tensorwise"))
    assert measured.step.datasheet_precision is None and "datasheet" not in measured.reason


def test_float8_on_a_part_without_an_fp8_peak_is_bad_input_naming_the_part_and_field():
    # a UserError: `plan` exits 2 with this one line
    with pytest.raises(UserError) as raised:
        predict(PlanRequest("llama-3.1-8b", "A100", 8, 8192, 64, "torchtitan", float8="tensorwise"))
    said = str(raised.value)
    assert "A100-SXM4-80GB" in said and "fp8" in said and "peak_fp8_flops" in said and "\n" not in said


def test_a_residual_may_exceed_one_but_a_share_of_peak_may_not():
    text = CALIBRATION_FILE.read_text(encoding="utf-8")

    def problems(name: str) -> list[str]:
        edited = re.sub(rf"(^  {re.escape(name)}:\n    value: )\S+", r"\g<1>1.5", text, count=1, flags=re.MULTILINE)
        assert edited != text
        return calibration_problems(parse_yaml(edited, CALIBRATION_FILE))

    assert problems("compute_efficiency.megatron/B200-SXM-180GB") == []
    assert problems("low_precision_efficiency.fp8") == []
    assert len(problems("attention_efficiency")) == 1
