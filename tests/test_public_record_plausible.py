"""The physical plausibility rule (catalog/plausibility.py): no recipe or record entry may claim more model FLOP/s
per GPU than the GPU's dense peak at its precision, nor a precision the GPU has no tensor cores for."""

from __future__ import annotations

import copy

import pytest
import yaml
from conftest import GPTOSS_1, REPO, load_seed, openrecipes, write_recipe

from openrecipes.catalog.hardware import entry_peak, load_reference_tables
from openrecipes.catalog.model import SummaryGpu
from openrecipes.catalog.validate import recipe_files, validate_file

MEGATRON_H100 = REPO / "recipes/llama-3.1-405b/h100/record-mbridge-26.06-fp8-1024gpu-tp8pp8cp2vp8-gbs1536-mbs1.yaml"
DEFAULT_VARIANT = {"H100": "H100-SXM5-80GB", "A100": "A100-SXM4-80GB"}
TORCHTITAN_H100 = REPO / "recipes/llama-3.1-70b/h100/record-titan-202412-fp8tw-256gpu-fsdp32tp8.yaml"
SUMMARY = next(p for p in recipe_files([REPO / "recipes"]) if "published:" not in p.read_text(encoding="utf-8")
               and "published_summary" in p.read_text(encoding="utf-8"))


def _entry(tmp_path, source, **changes):
    data = yaml.safe_load(source.read_text(encoding="utf-8"))
    for dotted, value in changes.items():
        *parents, last = dotted.split("__")
        node = data
        for key in parents:
            node = node[key]
        node[last] = value
    path = tmp_path / "recipes/x/y/entry.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return validate_file(path)


def _errors(report):
    return {e.field: e.message for e in report.errors}


def test_every_bundled_entry_is_within_its_gpus_peak():
    for path in recipe_files([REPO / "recipes"]):
        report = validate_file(path)
        assert not {"result.tokens_per_s_per_gpu", "workload.precision", "published.precision"} & set(_errors(report))


@pytest.mark.parametrize("tokens", [1e7, 1e15])
def test_a_record_entry_above_the_peak_is_refused_with_the_figure_and_the_limit(tmp_path, tokens):
    errors = _errors(_entry(tmp_path, MEGATRON_H100, result__tokens_per_s_per_gpu=tokens))
    message = errors["result.tokens_per_s_per_gpu"]
    assert "model TFLOP/s per GPU, above the FP8 dense peak of a H100-SXM5-80GB, 1,979 TFLOP/s" in message
    assert "peak_fp8_flops" in message


def test_just_under_the_peak_passes_the_rule_and_just_over_is_refused(tmp_path):
    tables = load_reference_tables()
    from openrecipes.catalog.plausibility import least_flops_per_token

    entry = validate_file(TORCHTITAN_H100).entry
    per_token = least_flops_per_token(tables.models[entry.model], entry.published.seq_length, False)
    limit = tables.gpus["H100"].peak_fp8_flops / per_token
    under = _errors(_entry(tmp_path / "a", TORCHTITAN_H100, result__tokens_per_s_per_gpu=limit * 0.999))
    over = _errors(_entry(tmp_path / "b", TORCHTITAN_H100, result__tokens_per_s_per_gpu=limit * 1.001))
    assert "result.tokens_per_s_per_gpu" not in under and "result.tokens_per_s_per_gpu" in over


@pytest.mark.parametrize(("gpu", "precision", "column"), [("H100", "nvfp4", "peak_nvfp4_flops"),
                                                          ("H100", "mxfp8", "peak_mxfp8_flops"),
                                                          ("A100", "fp8", "peak_fp8_flops"),
                                                          ("A100", "nvfp4", "peak_nvfp4_flops")])
def test_a_precision_the_gpu_lacks_is_refused(tmp_path, gpu, precision, column):
    errors = _errors(_entry(tmp_path, MEGATRON_H100, gpu__type=gpu, gpu__variant=DEFAULT_VARIANT[gpu],
                            published__precision=precision))
    assert f"is {precision}, but a {DEFAULT_VARIANT[gpu]} has no tensor cores for it" in errors["published.precision"]
    assert column in errors["published.precision"]


def test_a_summary_without_a_precision_is_held_to_the_fastest_peak(tmp_path):
    data = yaml.safe_load(SUMMARY.read_text(encoding="utf-8"))
    peak = entry_peak(SummaryGpu.model_validate(data["gpu"]), None, load_reference_tables())
    assert peak is not None and peak.column == max(
        ("peak_bf16_flops", "peak_fp8_flops", "peak_mxfp8_flops", "peak_nvfp4_flops"),
        key=lambda c: getattr(load_reference_tables().variants[peak.gpu], c) or 0)
    assert validate_file(SUMMARY).ok
    errors = _errors(_entry(tmp_path, SUMMARY, result__tokens_per_s_per_gpu=1e12))
    assert "its fastest dense peak" in errors["result.tokens_per_s_per_gpu"]


def test_a_recipe_above_the_peak_is_refused(tmp_path):
    data = copy.deepcopy(load_seed(GPTOSS_1))
    data["result"]["tokens_per_s_per_gpu"] = 1e7
    errors = _errors(validate_file(write_recipe(tmp_path, data)))
    assert "above the BF16 dense peak of a H200-SXM-141GB, 989 TFLOP/s (hardware/gpus.yaml peak_bf16_flops)" in errors[
        "result.tokens_per_s_per_gpu"]


def test_an_fp8_recipe_on_an_a100_is_refused(tmp_path):
    data = copy.deepcopy(load_seed(GPTOSS_1))
    data["gpu"]["type"], data["gpu"]["variant"], data["workload"]["precision"] = "A100", "A100-SXM4-80GB", "fp8"
    errors = _errors(validate_file(write_recipe(tmp_path, data)))
    assert "is fp8, but a A100-SXM4-80GB has no tensor cores for it" in errors["workload.precision"]


def test_an_fsdp_degree_that_does_not_divide_dp_is_refused(tmp_path):
    data = copy.deepcopy(load_seed(REPO / "recipes/qwen3-8b/h200/torchtitan-stock-fsdp2.yaml"))
    data["layout"]["fsdp"] = 3
    errors = validate_file(write_recipe(tmp_path, data)).errors
    assert any(e.field == "layout.fsdp" and "FSDP 3 does not divide DP 2" in e.message for e in errors)


def test_validate_and_audit_fail_an_impossible_entry_naming_file_field_figure_and_limit(tmp_path):
    for folder in ("models", "hardware"):
        (tmp_path / folder).symlink_to(REPO / folder)
    report = _entry(tmp_path, MEGATRON_H100, result__tokens_per_s_per_gpu=1e7)
    result = openrecipes("validate", str(report.path), "--catalog", str(tmp_path))
    assert result.returncode == 1 and "Traceback" not in result.stdout + result.stderr
    shown = " ".join(result.stdout.split())
    assert "entry.yaml" in shown and "result.tokens_per_s_per_gpu" in shown and "1,979 TFLOP/s" in shown
    audit = openrecipes("audit", "--catalog", str(tmp_path))
    assert audit.returncode == 1 and "Traceback" not in audit.stdout + audit.stderr
    assert "tokens_per_s_per_gpu" in audit.stdout + audit.stderr
