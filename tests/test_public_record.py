"""The public record in the catalog: its coverage, every entry's source, and each validation rule failing on a
broken entry (a copy of a real imported entry with one thing changed)."""

from __future__ import annotations

import math
import statistics
from dataclasses import replace

import pytest
import yaml
from conftest import REPO, openrecipes

from openrecipes import figures
from openrecipes.catalog.hardware import load_reference_tables
from openrecipes.catalog.published import check_published, flops_per_token, published_figures, published_label
from openrecipes.catalog.store import load_catalog
from openrecipes.catalog.validate import validate_file
from openrecipes.record.sources import read_excerpt
from openrecipes.thresholds import PUBLISHED_FLOPS

MEGATRON = (REPO / "recipes/llama-3.1-405b/h100/"
            "record-mbridge-26.06-fp8-1024gpu-tp8pp8cp2vp8-gbs1536-mbs1.yaml")
MOE = (REPO / "recipes/deepseek-v3/gb300/"
       "record-mbridge-26.06-mxfp8-256gpu-pp2vp8ep32-gbs4096-mbs1.yaml")
TORCHTITAN = (REPO / "recipes/llama-3.1-70b/h100/"
              "record-titan-202412-fp8tw-256gpu-fsdp32tp8.yaml")


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(REPO)


def test_the_record_covers_60_entries_4_gpu_types_and_1024_gpus(catalog):
    record = [e.entry for e in catalog.record]
    assert len(record) >= 60
    assert {e.gpu.type for e in record} >= {"H100", "B200", "B300", "GB200", "GB300"}
    assert max(e.gpu.count for e in record) >= 1024
    assert {e.model for e in record} == {"llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b", "deepseek-v3",
                                        "gpt-oss-120b", "qwen3-30b-a3b", "qwen3-235b-a22b", "kimi-k2"}
    published = {e.entry.model for e in (*catalog.record, *catalog.summaries)}
    assert len(published) >= 8
    assert {e.published.engine for e in record if e.published} == {"megatron-bridge", "torchtitan", "nemo"}


def test_every_record_entry_names_its_exact_source_and_is_never_ranked(catalog):
    ranked = {e.slug for e in catalog.entries}
    for item in catalog.record:
        run = item.entry.published
        assert run is not None, item.slug
        reference = run.reference
        assert reference.repository and reference.path and len(reference.commit) == 40 and reference.table
        if run.derivation is not None:  # an excerpt keeps the row under its line number
            excerpt = read_excerpt(REPO, run.derivation.excerpt)
            assert (excerpt.repository, excerpt.path, excerpt.commit) == (reference.repository, reference.path,
                                                                         reference.commit), item.slug
            assert excerpt.lines[reference.line].strip() == reference.row, item.slug
        else:
            stored = REPO / "data/public-record" / reference.repository / reference.path
            lines = stored.read_text(encoding="utf-8").splitlines()
            assert lines[reference.line - 1] == reference.row, item.slug  # the row, exactly as the stored copy has it
        assert item.slug not in ranked


def test_every_figure_is_the_one_in_its_source_row(catalog):
    for item in catalog.record:
        run = item.entry.published
        assert run is not None
        cells = [c.strip().replace(",", "") for c in run.reference.row.strip("|").split("|")]
        shown = item.entry.result.tokens_per_s_per_gpu
        if run.derivation is not None and run.derivation.method == "table-throughput":  # the job's tokens/s / GPUs
            job = run.derivation.published_tokens_per_s
            assert job is not None and round(job / item.entry.gpu.count, 2) == shown, item.slug
            assert f"{job:.10g}" in cells, (item.slug, job, run.reference.row)
            continue
        if run.derivation is not None:  # MLPerf: the median of the runs, each derived from its MLLOG
            assert round(statistics.median(run.derivation.run_tokens_per_s_per_gpu), 2) == shown, item.slug
            continue
        assert any(f"{shown:g}" in cell for cell in cells), (item.slug, shown, run.reference.row)
        if run.model_tflops_per_gpu is not None:
            assert any(f"{run.model_tflops_per_gpu:g}" in cell for cell in cells), item.slug


def test_the_published_tflops_agree_with_ours_within_the_tolerance_for_most_rows(catalog):
    ratios = [f.tflops_ratio for e in catalog.record
              if (f := published_figures(e.entry, catalog.tables)) and f.tflops_ratio]
    assert len(ratios) >= 150
    agreeing = [r for r in ratios if abs(r - 1) <= PUBLISHED_FLOPS.agree]
    assert len(agreeing) / len(ratios) > 0.85
    assert all(1 / PUBLISHED_FLOPS.absurd <= r <= PUBLISHED_FLOPS.absurd for r in ratios)


def test_flops_per_token_is_6n_without_the_input_embedding_plus_causal_attention():
    card = load_reference_tables().models["llama-3.1-70b"]
    arch = card.architecture
    params = card.active_params.count - arch["padded_vocab_size"] * arch["hidden_size"]
    attention = 6 * 80 * 8192 * 64 * 128  # 6 x layers x seq x heads x head_dim: causal half of 12 x ...
    assert flops_per_token(card, 8192) == 6 * params + attention
    assert flops_per_token(card, 8192, frozen_weights=True) == 4 * params + attention
    # A 128-key window on every other layer: those layers attend 128 keys, the others half the sequence.
    assert figures.attention_flops_per_token(2, 10, 4096, window=128, windowed_fraction=0.5) == 6 * (
        1024 + 64) * 10 * 2
    assert figures.attention_flops_per_token(2, 10, 4096, sparse_topk=512) == 6 * 512 * 10 * 2


def _broken(tmp_path, source, change):
    data = yaml.safe_load(source.read_text(encoding="utf-8"))
    change(data)
    path = tmp_path / "recipes/x/h100/entry.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return validate_file(path)


def _set(dotted, value):
    def change(data):
        *parents, last = dotted.split(".")
        node = data
        for key in parents:
            node = node[key]
        node[last] = value
    return change


BROKEN = [
    (MEGATRON, "published.layout.tp", 3, "published.layout", "does not divide the 1024 GPUs"),
    (MEGATRON, "published.layout.cp", 3, "published.layout", "does not divide"),
    (MEGATRON, "published.global_batch", 1001, "published.global_batch", "not a multiple of MBS x DP"),
    (MEGATRON, "published.layout.fsdp", 7, "published.layout.fsdp", "neither 0 (DDP) nor"),
    (MEGATRON, "published.layout.pp", 1, "published.layout.vp", "needs PP > 1"),
    (MOE, "published.layout.ep", 256, "published.layout.ep", "does not divide TP x CP x DP"),
    (TORCHTITAN, "published.layout.fsdp", 16, "published.layout", "not the 256 GPUs"),
    (TORCHTITAN, "published.global_batch", 500, "published.global_batch", "local batch x FSDP"),
    (MEGATRON, "published.model_tflops_per_gpu", 2600, "published.model_tflops_per_gpu", "factor of 2"),
    (MEGATRON, "gpu.type", "H900", "gpu.type", "unknown GPU type 'H900'"),
    (MEGATRON, "model", "llama-9", "model", "no model card named 'llama-9'"),
    (MEGATRON, "published.precision", "fp7", "published.precision", "Input should be"),
    (MEGATRON, "result.tokens_per_s_per_gpu", -326, "result.tokens_per_s_per_gpu", "greater than 0"),
    (MEGATRON, "result.tokens_per_s_per_gpu", math.nan, "result.tokens_per_s_per_gpu", "valid number"),
    (MEGATRON, "published.reference.commit", "067f987", "published.reference.commit", "pattern"),
    (MEGATRON, "published.engine", "jax", "published.engine", "Input should be"),
]


@pytest.mark.parametrize(("source", "field", "value", "reported", "message"), BROKEN,
                         ids=[f"{b[1]}={b[2]}" for b in BROKEN])
def test_each_rule_fails_on_a_broken_entry(tmp_path, source, field, value, reported, message):
    assert validate_file(source).ok
    report = _broken(tmp_path, source, _set(field, value))
    assert not report.ok
    assert any(e.field == reported and message in e.message for e in report.errors), report.errors


def test_a_moderate_tflops_disagreement_is_a_finding_not_an_error(tmp_path):
    report = _broken(tmp_path, MEGATRON, _set("published.model_tflops_per_gpu", 1000))
    assert report.ok and [f.field for f in report.findings] == ["published.model_tflops_per_gpu"]
    assert "beyond the 10% tolerance" in report.findings[0].message


def test_a_published_ga_that_contradicts_the_batch_is_a_finding(tmp_path):
    def change(data):
        data["published"]["gradient_accumulation"] = 5
    report = _broken(tmp_path, MEGATRON, change)
    assert report.ok and any("GA 5" in f.message for f in report.findings)


def test_a_card_without_its_attention_shape_gives_no_flops_count_and_no_crash(tmp_path):
    tables = load_reference_tables()
    card = tables.models["llama-3.1-405b"]
    shapeless = card.model_copy(update={"architecture": {"layers": 126}})
    bare = replace(tables, models={**tables.models, "llama-3.1-405b": shapeless})
    entry = validate_file(MEGATRON).entry
    assert published_figures(entry, bare) is None
    assert check_published(entry, bare) == ([], [])


def test_validate_reports_a_broken_entry_with_file_field_and_line(tmp_path):
    report = _broken(tmp_path, MEGATRON, _set("published.layout.tp", 3))
    result = openrecipes("validate", str(report.path), "--json")
    assert result.returncode == 1
    error = next(e for r in __import__("json").loads(result.stdout) for e in r["errors"])
    assert error["field"] == "published.layout" and error["line"] and "Traceback" not in result.stderr


def test_a_catalog_holding_a_broken_entry_is_bad_input_for_the_commands_that_read_it(tmp_path):
    report = _broken(tmp_path, MEGATRON, _set("published.layout.pp", 3))
    result = openrecipes("list", "--catalog", str(tmp_path))
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert "recipes/x/h100/entry.yaml:" in result.stderr and "published.layout" in result.stderr
    assert report.errors[0].line is not None


def test_the_seed_summaries_without_a_published_block_stay_valid():
    for path in REPO.glob("recipes/*/*/published-summary.yaml"):
        assert validate_file(path).ok, path
    data = yaml.safe_load((REPO / "recipes/gpt-oss-20b/h100/published-summary.yaml").read_text(encoding="utf-8"))
    assert "published" not in data


def test_derived_figures_of_an_entry(catalog):
    entry = catalog.find(MEGATRON.stem).entry
    derived = published_figures(entry, catalog.tables)
    assert published_label(entry.published, entry.gpu.count) == "TP8 PP8 VP8 CP2 DP8" and entry.precision == "fp8"
    assert derived is not None and derived.data_parallel == 1024 / (8 * 8 * 2)
    assert derived.implied_tflops_per_gpu == pytest.approx(326 * derived.flops_per_token / 1e12)
    assert derived.mfu_bf16 == pytest.approx(derived.implied_tflops_per_gpu * 1e12 / 989e12)
    assert derived.mfu_precision == pytest.approx(derived.mfu_bf16 * 989 / 1979)  # against H100's dense FP8 peak
    assert derived.tflops_ratio == pytest.approx(822 / derived.implied_tflops_per_gpu)
