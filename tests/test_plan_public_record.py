"""The planner against the public record: every published entry with a layout beside the prediction of exactly that
layout, the inexpressible ones listed with their reason, the summary in public_record.json current."""

from __future__ import annotations

import pytest
from conftest import REPO, openrecipes

from openrecipes.catalog.store import load_catalog
from openrecipes.plan import public_record


@pytest.fixture(scope="module")
def rows():
    return public_record.compared(load_catalog(REPO))


def test_every_entry_is_predicted_or_says_why_not(rows):
    assert len(rows) >= 200
    assert all((r.predicted is None) == (r.reason is not None) for r in rows)
    expressed = [r for r in rows if r.predicted is not None]
    assert len(expressed) >= 200 and {r.engine for r in expressed} == {"megatron", "torchtitan"}
    assert all(0 < r.low < r.high for r in expressed)  # a range need not hold its own prediction (docs/planning.md)
    # Megatron's low precisions are timed by their fitted GEMM speed-ups; torchtitan's FP8 only where our own pairs of
    # runs measured it (H200), so its H100 entries are named, never predicted as BF16; LoRA is not full training
    assert {r.precision for r in expressed if r.engine == "megatron"} == {
        "bf16", "fp8", "fp8-current-scaling", "mxfp8", "nvfp4"}
    assert all("no pair of our runs measured its time on H100" in r.reason
               for r in rows if r.engine == "torchtitan" and r.precision != "bf16")
    assert all(r.reason.startswith("LoRA") for r in rows if "-lora-" in r.name)


def test_deepseek_v3_pipeline_stages_are_balanced_as_megatron_splits_them(rows):
    # 61 layers over 16 stages: 2, 4 x 14, 3 (the step waits on the heaviest stage, so never 9 and 10 on the ends)
    deepseek = next(r for r in rows if r.name == "record-mbridge-26.04-mxfp8-256gpu-pp16ep8-gbs4096-mbs1")
    assert deepseek.predicted is not None and abs(deepseek.error) < 0.25


def test_the_committed_summary_is_current():
    assert public_record.stored_summary() == public_record.summary(REPO), (
        "derived/public_record.json is stale: run `openrecipes refresh`")


def test_summary_pins_the_accuracy_on_the_record():
    summary = public_record.stored_summary()
    # what the planner reaches today, held out (docs/planning.md, "The public record"); the goal, a median within
    # 10% and 85% of entries within 20%, is not met yet: NVIDIA's releases ran the same MoE layouts up to 1.8x apart
    assert summary["median_abs_error"] <= 0.115 and summary["within_20_percent"] >= 0.74
    assert summary["expressed"] >= 210
    # no band of an engine and GPU type without a point: every group with entries has some the planner expresses
    groups = summary["groups"]
    assert {(g["engine"], g["band"]) for g in groups} >= {("megatron", band) for band in ("1-8", "9-64", "65-1,024")}
    # every part is one block of hardware/gpus.yaml with its links: the AMD MI355X's entries are predicted too
    assert all(g["expressed"] >= 1 for g in groups), [g for g in groups if not g["expressed"]]


def test_ranges_hold_about_nine_in_ten_published_figures(rows):
    expressed = [r for r in rows if r.predicted is not None]
    inside = sum(r.low <= r.published <= r.high for r in expressed) / len(expressed)
    # each entry's own error is among those that set its range, and the split-conformal tails widen it: a held-out
    # score is test_plan_heldout.py's (86-88% per band)
    assert 0.8 <= inside <= 0.98, inside


def test_compare_published_prints_every_entry_and_refuses_bad_input():
    result = openrecipes("plan", "llama-3.1-8b", "--compare-published")
    assert result.returncode == 0, result.stderr
    text = " ".join(result.stdout.split())
    assert "published entries beside the planner's prediction" in text and "not expressed:" in text
    assert openrecipes("plan", "nope", "--compare-published").returncode == 2
    none = openrecipes("plan", "qwen3-0.6b", "--compare-published")
    assert none.returncode == 2 and "no published entry of qwen3-0.6b" in none.stderr
