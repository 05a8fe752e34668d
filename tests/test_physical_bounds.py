"""Figures no GPU can reach, each from a reproduction a user could make, refused by `validate` (a finding, exit 1)
and by the writers (`reproduce`, `measure --write`, the importers: exit 2, nothing written), naming the field, the
bound and where the bound comes from (catalog/plausibility.py)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml
from conftest import REPO, openrecipes

QWEN_06B = "recipes/qwen3-0.6b/h200/tuned-tp1-pp1-cp1-dp1-none-mb4-compile.yaml"
QWEN_06B_TUNE = "runs/tune-qwen3-0.6b-h200x1-20261130-222947"
QWEN_06B_RUN = f"{QWEN_06B_TUNE}/tp1-pp1-cp1-dp1-none-mb4-compile"
TITAN_H100_96 = "recipes/llama-3.1-8b/h100/record-titan-202412-bf16-8gpu-fsdp8.yaml"
DGXC_8B = "data/record-sources/dgxc-benchmarking/v24.11.1/llama3.1/README_8b.md.txt"
STAMP = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3}")


def _catalog(root: Path, *folders: str) -> Path:
    for folder in ("models", "hardware", *folders):
        shutil.copytree(REPO / folder, root / folder)
    return root


def _one_ms_steps(source: Path, target: Path) -> Path:
    """The run's log with every step line 1 ms after the one before (each other line stamped as the step before
    it): 16 rows x 8,192 tokens a millisecond on one GPU."""
    step, lines = 0, []
    for line in source.read_text(encoding="utf-8").splitlines(keepends=True):
        if " step: " in line:
            step += 1
        lines.append(STAMP.sub(f"2026-12-01 10:00:{step // 1000:02d},{step % 1000:03d}", line, count=1))
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("".join(lines), encoding="utf-8")
    return target


def _one_error_line(result) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 2 and len(lines) == 1 and "Traceback" not in result.stdout + result.stderr, result
    return lines[0]


def test_a_reproduction_from_a_log_of_1_ms_steps_is_refused_and_not_written(tmp_path):
    root = _catalog(tmp_path, "recipes/qwen3-0.6b", QWEN_06B_TUNE, "runs/slurm-h200-20261202")
    log = _one_ms_steps(root / QWEN_06B_RUN / "train.log", root / "runs/reproductions/fast/train.log")
    before = (root / QWEN_06B).read_bytes()
    for write in ([], ["--write"]):
        line = _one_error_line(openrecipes("reproduce", root / QWEN_06B, log, *write))
        assert "131,072,000" in line and "989 TFLOP/s" in line and "H200-SXM-141GB" in line, line
        assert "peak_bf16_flops" in line and "train.log" in line
    line = _one_error_line(openrecipes("measure", log, "--recipe", root / QWEN_06B, "--write"))
    assert "does not validate" in line and "result.mfu" in line, line  # MFU over 100%, refused by the schema
    assert (root / QWEN_06B).read_bytes() == before


def test_a_stored_reproduction_above_the_peak_fails_validate_and_audit(tmp_path):
    root = _catalog(tmp_path, "recipes/qwen3-0.6b", QWEN_06B_TUNE, "runs/slurm-h200-20261202")
    recipe = root / QWEN_06B
    text = recipe.read_text(encoding="utf-8")
    recipe.write_text(text.replace("tokens_per_s_per_gpu: 72961.0", "tokens_per_s_per_gpu: 131072000.0"), "utf-8")
    result = openrecipes("validate", recipe, "--catalog", root)
    assert result.returncode == 1 and "reproductions.0.tokens_per_s_per_gpu" in result.stdout, result.stdout
    assert "989 TFLOP/s" in " ".join(result.stdout.split())
    assert openrecipes("audit", "--catalog", root).returncode == 1


def test_a_2048_row_microbatch_in_a_16_row_global_batch_is_refused(tmp_path):
    root = _catalog(tmp_path, "recipes/qwen3-0.6b", QWEN_06B_TUNE, "runs/slurm-h200-20261202")
    recipe = root / QWEN_06B
    data = yaml.safe_load(recipe.read_text(encoding="utf-8"))
    data["layout"].update(rows_per_microbatch=2048, max_tokens_per_gpu=2048 * 8192)
    data["run"] = data["run"].replace("--training.local_batch_size 4", "--training.local_batch_size 2048")
    recipe.write_text(yaml.safe_dump(data, sort_keys=False, width=1000), encoding="utf-8")
    result = openrecipes("validate", recipe, "--catalog", root)
    shown = " ".join(result.stdout.split())
    assert result.returncode == 1, shown
    assert "layout.rows_per_microbatch" in shown and "exceed the global batch of 16" in shown
    assert "layout.max_tokens_per_gpu" in shown and "141 GB of a H200-SXM-141GB" in shown


def test_a_record_entry_claiming_5000_gib_on_a_96_gb_h100_is_refused(tmp_path):
    root = _catalog(tmp_path)
    entry = root / TITAN_H100_96
    entry.parent.mkdir(parents=True)
    entry.write_text((REPO / TITAN_H100_96).read_text(encoding="utf-8").replace("memory_gib: 82.4",
                                                                                  "memory_gib: 5000"), "utf-8")
    result = openrecipes("validate", entry, "--catalog", root)
    shown = " ".join(result.stdout.split())
    assert result.returncode == 1 and "published.memory_gib" in shown and "5,000 GiB" in shown, shown
    assert "89.4 GiB (96 GB)" in shown and "H100-SXM-96GB-500W" in shown
    assert openrecipes("audit", "--catalog", root).returncode == 1


def _dgxc_catalog(root: Path, edit=lambda text: text) -> Path:
    (root / "recipes").mkdir(parents=True)
    excerpt = root / DGXC_8B
    excerpt.parent.mkdir(parents=True)
    excerpt.write_text(edit((REPO / DGXC_8B).read_text(encoding="utf-8")), encoding="utf-8")
    return root


def test_an_imported_mfu_of_6231_percent_is_refused_and_nothing_is_written(tmp_path):
    mfu = re.search(r"\| ([0-9.]+)% ", (REPO / DGXC_8B).read_text(encoding="utf-8")).group(1)
    root = _dgxc_catalog(tmp_path / "catalog", lambda text: text.replace(f"| {mfu}% ", "| 6231.00% ", 1))
    result = _import("import_dgxc_benchmarking.py", root)
    line = _one_error_line(result)
    assert "published.derivation.published_mfu_percent" in line and "6,231%" in line and "100%" in line, line
    assert not list((root / "recipes").rglob("*.yaml"))


def test_a_stored_entry_with_an_mfu_over_100_percent_fails_validate(tmp_path):
    root = _catalog(tmp_path)
    source = next((REPO / "recipes/llama-3.1-8b/h100").glob("record-dgxc-*.yaml"))
    entry = root / source.relative_to(REPO)
    entry.parent.mkdir(parents=True)
    entry.write_text(re.sub(r"published_mfu_percent: [0-9.]+", "published_mfu_percent: 6231.0",
                            source.read_text(encoding="utf-8")), "utf-8")
    result = openrecipes("validate", entry, "--catalog", root)
    assert result.returncode == 1 and "published.derivation.published_mfu_percent" in result.stdout, result.stdout


def _import(script: str, root: Path, *args: str) -> subprocess.CompletedProcess:
    """An importer run as a user runs it, on the package this test imports."""
    return subprocess.run([sys.executable, str(REPO / "scripts" / script), "--root", str(root), *args],
                          capture_output=True, text=True, check=False,
                          env={"PYTHONPATH": os.environ.get("PYTHONPATH", str(REPO / "src"))})
