"""One catalog, one truth: a catalog's own hardware/gpus.yaml is the one its planning reads. A part only that catalog
holds is planned from its block (its peaks, memory and links), and `tune --dry-run` from a recipe of that catalog
ranks its layouts instead of failing on a part the bundled file lacks."""

from __future__ import annotations

import shutil
from pathlib import Path

from conftest import REPO, openrecipes

from openrecipes.catalog.hardware import load_reference_tables
from openrecipes.plan.predict import PlanRequest, predict

X100 = """
X100-SXM-141GB:
  type: X100
  default: true
  name: A made-up part, one block of its catalog's hardware/gpus.yaml and nothing else
  peak_bf16_flops: 1.2e+15
  memory_gb: 141
  memory_bandwidth_tb_s: 5.0
  power_w: 800
  scale_up: {link: XLink 1, gb_s: 900, domain: 8}
  scale_out: {fabric: RoCE, gbit_s: 400}
  source: its datasheet
  date: 2026-12-04
"""


def _catalog(tmp_path: Path) -> Path:
    """The qwen3-8b stock torchtitan recipe moved to an X100, with its card and the bundled parts plus the X100."""
    folder = tmp_path / "recipes/qwen3-8b/x100"
    folder.mkdir(parents=True)
    text = (REPO / "recipes/qwen3-8b/h200/torchtitan-stock-fsdp2.yaml").read_text()
    (folder / "torchtitan-stock-fsdp2.yaml").write_text(text.replace("type: H200", "type: X100").replace(
        "variant: H200-SXM-141GB", "variant: X100-SXM-141GB"))
    shutil.copytree(REPO / "models", tmp_path / "models")
    (tmp_path / "hardware").mkdir()
    shutil.copy(REPO / "hardware/instances.yaml", tmp_path / "hardware")
    (tmp_path / "hardware/gpus.yaml").write_text((REPO / "hardware/gpus.yaml").read_text() + X100)
    return tmp_path


def test_the_planner_plans_a_part_only_its_catalog_holds(tmp_path):
    tables = load_reference_tables(_catalog(tmp_path))
    best = predict(PlanRequest("qwen3-8b", "X100", 2, 8192, 16, "torchtitan"), tables)[0]
    assert best.variant == "X100-SXM-141GB" and best.tokens_per_s_per_gpu > 0
    assert "X100-SXM-141GB has no measured torchtitan point of its own" in best.interval.basis


def test_tune_dry_run_from_a_recipe_of_that_catalog_ranks_its_layouts(tmp_path):
    root = _catalog(tmp_path)
    base = root / "recipes/qwen3-8b/x100/torchtitan-stock-fsdp2.yaml"
    result = openrecipes("tune", "qwen3-8b", "--gpu", "X100", "--gpus", "2", "--budget-minutes", "30", "--dry-run",
                         "--base", str(base))
    assert result.returncode == 0, result.stderr
    assert "X100" in result.stdout and "Traceback" not in result.stderr
