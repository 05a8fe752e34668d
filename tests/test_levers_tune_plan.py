"""The levers in the planner (memory terms, measured time factors, unmeasured until measured) and in `tune`
(searched when asked, an FP8 search on its own board)."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import pytest
from layout_helpers import relaid
from typer.testing import CliRunner

import openrecipes.tune as tuning
from openrecipes.catalog.model import KERNELS
from openrecipes.cli import app
from openrecipes.errors import UserError
from openrecipes.plan import levers
from openrecipes.plan.constants import GIB
from openrecipes.plan.levers import ATTENTION_CHOICES, KERNEL_CHOICES
from openrecipes.plan.predict import PlanRequest, context, predict_layout
from tests.test_plan_tune import WHEN, FakeRunner, _key
from tests.test_plan_tune import catalog as catalog  # the fixture

QWEN3_8B = PlanRequest("qwen3-8b", "H200", 2, 8192, 16, "torchtitan")
QWEN3_1_7B = PlanRequest("qwen3-1.7b", "H200", 1, 8192, 16, "torchtitan")


def _best_fitting(request: PlanRequest):
    """The best fitting BF16 layout without pipeline stages that pulls no kernel, attention or FP8 lever."""
    from openrecipes.plan.predict import predict

    return next(p for p in predict(replace(request, search=levers.BF16_SEARCH)) if p.fits and p.layout.pp == 1)


def _with(prediction, **fields):
    """The same Qwen3-8B layout with levers."""
    return predict_layout(context(QWEN3_8B), relaid(prediction.layout, **fields))


def test_fused_linear_cross_entropy_replaces_the_fp32_logits_term():
    best = _best_fitting(QWEN3_8B)
    plain = _with(best, rows_per_microbatch=1, max_tokens_per_gpu=8192)
    fused = _with(plain, kernels=("liger-fused-linear-cross-entropy",))
    tokens, vocab, hidden = plain.layout.max_tokens_per_gpu, 151936, 4096
    chunk = 256  # next power of two of 8,192 / ceil(151,936 / 4,096) = 215.6
    assert fused.memory.parts["logits"] == (chunk * vocab + tokens * hidden + vocab * hidden) * 2
    assert plain.memory.parts["logits"] / GIB > 4 * fused.memory.parts["logits"] / GIB
    assert {k: v for k, v in fused.memory.parts.items() if k != "logits"} == {
        k: v for k, v in plain.memory.parts.items() if k != "logits"}


def test_liger_rmsnorm_drops_eager_amps_fp32_norm_copies_and_nothing_else():
    eager = relaid(_best_fitting(QWEN3_1_7B).layout, compile=False, recompute="none")
    ctx = context(QWEN3_1_7B)
    plain, fused = predict_layout(ctx, eager), predict_layout(ctx, relaid(eager, kernels=("liger-rmsnorm",)))
    assert fused.memory.parts["activations"] < plain.memory.parts["activations"]
    compiled = relaid(eager, compile=True)
    assert (predict_layout(ctx, relaid(compiled, kernels=("liger-rmsnorm",))).memory.parts
            == predict_layout(ctx, compiled).memory.parts)
    swiglu = predict_layout(ctx, relaid(eager, kernels=("liger-swiglu", "liger-rope"), attention="sdpa-flash"))
    assert swiglu.memory.parts == plain.memory.parts


def test_an_unmeasured_lever_is_predicted_as_without_it_and_named():
    plain = _best_fitting(QWEN3_8B)
    unmeasured = ("liger-rmsnorm", "liger-swiglu", "liger-rope")
    fused = _with(plain, kernels=unmeasured, attention="sdpa-cudnn")
    assert fused.tokens_per_s_per_gpu == plain.tokens_per_s_per_gpu
    assert fused.step.unmeasured_levers == (*unmeasured, "attention sdpa-cudnn")
    assert "levers" not in fused.step.parts_s()
    row = fused.exported()
    assert row.kernels == list(unmeasured) and row.unmeasured_levers[-1] == "attention sdpa-cudnn"
    assert plain.exported().unmeasured_levers == []


def _own_runs(monkeypatch, rows):
    monkeypatch.setattr(levers, "read_yaml", lambda path: SimpleNamespace(data={"own_runs": {"points": rows}}))
    levers.measured_factors.cache_clear()


def _row(name, tps, **lever_fields):
    return {"name": name, "model": "qwen3-8b", "gpu": "H200", "gpus": 2, "row_tokens": 8192, "global_batch": 16,
            "layout": {"tp": 1, "pp": 1, "cp": 1, "dp": 2, "recompute": "none", "rows_per_microbatch": 1,
                       "compile": True, **lever_fields}, "tokens_per_s_per_gpu": tps}


def test_a_lever_measured_by_a_pair_of_own_runs_gets_that_factor(monkeypatch):
    # the FLCE run writes the default reshard_after_forward out: still the stock run's twin
    _own_runs(monkeypatch, [_row("stock", 10000.0), _row("flce", 10500.0, kernels=["liger-fused-linear-cross-entropy"],
                                                         reshard_after_forward=True),
                            _row("flce-cudnn", 11025.0, kernels=["liger-fused-linear-cross-entropy"],
                                 attention="sdpa-cudnn"),
                            _row("two-at-once", 12000.0, kernels=["liger-rmsnorm", "liger-swiglu"])])
    try:
        factors = levers.measured_factors()
        assert set(factors) == {("H200", "liger-fused-linear-cross-entropy"), ("H200", "attention sdpa-cudnn")}
        assert factors[("H200", "liger-fused-linear-cross-entropy")].factor == pytest.approx(1.05)
        assert factors[("H200", "attention sdpa-cudnn")].pairs == ("flce-cudnn / flce",)
        plain = _best_fitting(QWEN3_8B)
        fused = _with(plain, kernels=("liger-rmsnorm", "liger-fused-linear-cross-entropy"), attention="sdpa-cudnn")
        assert fused.tokens_per_s_per_gpu == pytest.approx(plain.tokens_per_s_per_gpu * 1.05 * 1.05)
        assert fused.step.unmeasured_levers == ("liger-rmsnorm",)  # measured only together with swiglu
        assert fused.step.parts_s()["levers"] < 0
        on_b200 = levers.time_effect(fused.layout, "B200")
        assert on_b200.speedup == 1 and len(on_b200.unmeasured) == 3
    finally:
        levers.measured_factors.cache_clear()


def test_the_lever_runs_give_measured_factors_and_plan_enumerates_the_useful_ones():
    levers.measured_factors.cache_clear()
    factors = levers.measured_factors()
    # runs/levers-20261201 and runs/fp8-20261202: each FP8 arm against every BF16 arm of its model and layout (the
    # BF16 arms of its call, their repeats and the recipe's run), on Qwen3-0.6B, 1.7B and 4B
    tensorwise = factors[("H200", "float8 tensorwise")]
    assert {pair.split("/")[0].split("-h200")[0] for pair in tensorwise.pairs} == {"qwen3-0.6b", "qwen3-1.7b",
                                                                                   "qwen3-4b"}
    assert 1.10 < tensorwise.factor < 1.20 and factors[("H200", "float8 rowwise")].factor < 1
    assert factors[("H200", "liger-fused-linear-cross-entropy")].factor < 1
    assert factors[("H200", "attention sdpa-flash")].factor < 1
    assert {g[0].float8 for g in levers.lever_groups("torchtitan", "H200", levers.LeverSearch())} == {None}  # BF16
    sets = [group[0] for group in levers.lever_groups("torchtitan", "H200", levers.LeverSearch(float8="measured"))]
    # sdpa-flash was measured slower and has no memory term: it can only lose, so it is not enumerated; the fused
    # loss was measured slower too, but frees memory
    assert {s.attention for s in sets} == {None}
    assert {s.kernels for s in sets} == {(), ("liger-fused-linear-cross-entropy",)}
    assert {s.float8 for s in sets} == {None, "tensorwise"}
    both = (False, True)
    assert {(s.compile, s.reshard_after_forward) for s in sets} == {(c, r) for c in both for r in both}
    # nothing measured on B200: compile and resharding only; Megatron has none of these levers
    assert {(g[0].kernels, g[0].attention, g[0].float8)
            for g in levers.lever_groups("torchtitan", "B200", levers.LeverSearch())} == {((), None, None)}
    # Megatron: one group, of its optimizer fractions on the host, and no torchtitan lever
    (megatron,) = levers.lever_groups("megatron", "H200", levers.LeverSearch())
    assert [block.offload_fraction for block in megatron] == [0.0, 0.5, 0.9, 1.0]
    assert not any(block.compile or block.kernels or block.float8 for block in megatron)


@pytest.mark.parametrize(("args", "message"), [
    (["--kernels", "liger-layernorm"], "--kernels liger-layernorm: not one of liger-rmsnorm, liger-swiglu"),
    (["--attention", "flash3"], "--attention flash3: not one of sdpa-cudnn, sdpa-flash, sdpa-efficient, flex"),
    (["--float8", "blockwise"], "--float8 blockwise: not one of tensorwise, rowwise"),
])
def test_plan_refuses_unknown_lever_names(args, message):
    result = CliRunner().invoke(app, ["plan", "qwen3-8b", "--gpu", "H200", "--gpus", "2", "--engine", "torchtitan",
                                      *args])
    assert isinstance(result.exception, UserError) and str(result.exception).startswith(message)


def test_plan_levers_are_torchtitan_only():
    with pytest.raises(UserError, match="torchtitan levers"):
        from openrecipes.plan.predict import predict

        predict(replace(QWEN3_8B, engine="megatron", kernels=("liger-rope",)))


def test_plan_says_which_lever_is_unmeasured():
    result = CliRunner().invoke(app, ["plan", "qwen3-8b", "--gpu", "H200", "--gpus", "2", "--engine", "torchtitan",
                                      "--global-batch", "16", "--top", "2", "--kernels", "liger-rope"])
    assert result.exit_code == 0, result.output
    assert "time effect unmeasured" in " ".join(result.output.split())


# ---- tune ---------------------------------------------------------------------------------------------------------

def _setup(catalog, **options):
    return tuning.setup("qwen3-8b", "H200", 2, catalog / "recipes/qwen3-8b/h200/torchtitan-stock-fsdp2.yaml",
                        catalog, when=WHEN, **options)


def test_levers_are_searched_only_when_asked(catalog):
    plain = _setup(catalog)
    assert all(not levers.lever_names(c.layout.levers) for c in plain.ranked)
    with_kernels = _setup(catalog, kernels=True)
    by_layout: dict = {}
    for c in with_kernels.ranked:
        by_layout.setdefault(relaid(c.layout, kernels=()), set()).add(c.layout.levers.kernels)
    assert set(KERNEL_CHOICES) in by_layout.values()
    assert len(KERNEL_CHOICES) == 6 and KERNEL_CHOICES[-1] == KERNELS
    # what the fused loss frees lets layouts fit that did not without it
    assert {relaid(c.layout, kernels=()) for c in with_kernels.ranked} >= {c.layout for c in plain.ranked}
    attention = _setup(catalog, attention=True)
    assert {c.layout.levers.attention for c in attention.ranked} == set(ATTENTION_CHOICES)
    # every layout with each choice, the reference's own layout too (only its stock form is the reference arm)
    assert len(attention.ranked) == len(ATTENTION_CHOICES) * (len(plain.ranked) + 1) - 1


def test_an_fp8_search_is_its_own_board(catalog, monkeypatch):
    import tests.test_plan_tune as fake

    # every FP8 arm runs slower than the BF16 reference arm: the search must still pick an FP8 winner
    monkeypatch.setattr(fake, "_key", lambda flags: (*_key(flags), "--model.converters" in flags))
    monkeypatch.setattr(fake, "TRUE_SPEED", {(1, 1, 1, 2, "selective", 2, False, True, False): 8313.0})
    monkeypatch.setattr(fake, "OTHER_COMPILED", 5000.0)
    monkeypatch.setattr(fake, "OTHER_EAGER", 4000.0)
    s = _setup(catalog, float8="tensorwise")
    assert s.ranked and all(c.layout.levers.float8 == "tensorwise" for c in s.ranked)
    assert "fp8tensorwise" in s.run_root.name
    runner = FakeRunner()
    result = tuning.tune(s, budget_minutes=12, runner=runner, clock=runner.clock)
    assert result.reference.measurement.tokens_per_s_per_gpu > result.winner.measurement.tokens_per_s_per_gpu
    assert result.winner is not result.reference and result.winner.candidate.layout.levers.float8 == "tensorwise"
    path = tuning.write_winner(s, result)
    assert result.config.result == "precision change"
    text = path.read_text()
    assert "precision: fp8" in text and "scaling: tensorwise" in text and "fsdp_float8_all_gather: true" in text
    assert "--model.converters quantize.linear.float8" in text and "configuration: precision change" in text
    assert ", fp8 tensorwise (chosen by `openrecipes tune`)" in text
    monkeypatch.chdir(catalog)
    checked = CliRunner().invoke(app, ["validate", str(path)])
    assert checked.exit_code == 0, checked.output


def test_tune_refuses_an_fp8_base_and_an_unknown_scaling(catalog):
    result = CliRunner().invoke(app, ["tune", "qwen3-8b", "--gpu", "H200", "--gpus", "2", "--budget-minutes", "9",
                                      "--dry-run", "--float8", "fp4"])
    assert isinstance(result.exception, UserError)
    assert str(result.exception) == "--float8 fp4: not one of tensorwise, rowwise"
    base = catalog / "recipes/qwen3-8b/h200/torchtitan-stock-fsdp2.yaml"
    base.write_text(base.read_text().replace("precision: bf16", "precision: fp8"))
    with pytest.raises(UserError, match="tune starts from a BF16 recipe"):
        _setup(catalog)
