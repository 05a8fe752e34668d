"""hardware/gpus.yaml is the one home of a part's facts: a part is one block, its links typed and bounded; a block
missing a fact, or with an impossible one, stops `validate` with one line naming the file, the part, the field and
the fix; a catalog adds a part by adding a block."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import GPTOSS_1, REPO, openrecipes

from openrecipes.catalog.hardware import load_reference_tables, resolve_gpu

H100_LINKS = "  scale_up: {link: NVLink 4, gb_s: 900, domain: 8}\n  scale_out: {fabric: InfiniBand NDR, gbit_s: 400}\n"
NEW_PART = """
X100-OAM-64GB:
  type: X100
  default: true
  name: A made-up accelerator, one block and nothing else
  peak_bf16_flops: 500.0e+12
  memory_gb: 64
  memory_bandwidth_tb_s: 2.0
  power_w: 600
  scale_up: {link: XLink 1, gb_s: 400, domain: 4}
  scale_out: {fabric: RoCE, gbit_s: 200}
  source: its datasheet
  date: 2026-12-04
"""


def _catalog(tmp_path: Path, gpus: str) -> Path:
    """A one-recipe catalog (the gpt-oss seed, its card, the instance prices) with its own hardware/gpus.yaml."""
    recipes = tmp_path / "recipes/gpt-oss-20b/h200"
    recipes.mkdir(parents=True)
    shutil.copy(GPTOSS_1, recipes / GPTOSS_1.name)
    (tmp_path / "models").mkdir()
    shutil.copy(REPO / "models/gpt-oss-20b.yaml", tmp_path / "models")
    (tmp_path / "hardware").mkdir()
    shutil.copy(REPO / "hardware/instances.yaml", tmp_path / "hardware")
    (tmp_path / "hardware/gpus.yaml").write_text(gpus, encoding="utf-8")
    return tmp_path


def _bundled() -> str:
    text = (REPO / "hardware/gpus.yaml").read_text(encoding="utf-8")
    assert text.index(H100_LINKS) < text.index("H200-SXM-141GB:")  # each edit below hits the first block, the H100
    return text


@pytest.mark.parametrize(("edit", "field", "says"), [
    (lambda t: t.replace(H100_LINKS, "", 1), "H100-SXM5-80GB.scale_up", "Field required"),
    (lambda t: t.replace("gb_s: 900,", "gb_s: 0,", 1), "H100-SXM5-80GB.scale_up.gb_s", "greater than 0"),
    (lambda t: t.replace("gbit_s: 400}", "gbit_s: -1}", 1), "H100-SXM5-80GB.scale_out.gbit_s", "greater than 0"),
    (lambda t: t.replace("  power_w: 700\n", "", 1), "H100-SXM5-80GB.power_w", "Field required"),
    (lambda t: t.replace("  memory_bandwidth_tb_s: 3.35\n", "", 1), "H100-SXM5-80GB.memory_bandwidth_tb_s",
     "Field required"),
])
def test_a_part_missing_a_fact_or_with_an_impossible_one_exits_2_naming_part_field_and_fix(tmp_path, edit, field,
                                                                                          says):
    root = _catalog(tmp_path, edit(_bundled()))
    done = openrecipes("validate", "--catalog", root)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr
    assert "hardware/gpus.yaml:" in lines[0] and f" {field}: " in lines[0] and says in lines[0]
    assert '"Adding a GPU part"' in lines[0]  # the fix: where every field is given with its unit


def test_a_catalog_written_with_the_flat_link_fields_is_told_where_they_went(tmp_path):
    flat = _bundled().replace(H100_LINKS, "  nvlink_gb_s: 900\n  nvlink_domain: 8\n  scale_out_gbit_s: 400\n", 1)
    done = openrecipes("validate", "--catalog", _catalog(tmp_path, flat))
    assert done.returncode == 2
    assert "H100-SXM5-80GB.nvlink_gb_s" in done.stderr and "nvlink_gb_s is scale_up.gb_s" in done.stderr


def test_a_catalog_adds_a_part_by_adding_one_block(tmp_path):
    root = _catalog(tmp_path, _bundled() + NEW_PART)
    assert openrecipes("validate", "--catalog", root).returncode == 0
    assert openrecipes("list", "--catalog", root).returncode == 0
    tables = load_reference_tables(root)
    assert resolve_gpu("x100", tables) == ("X100", "X100-OAM-64GB")
    part = tables.gpus["X100"]
    assert (part.scale_up.link, part.scale_up.gb_s, part.scale_up.domain) == ("XLink 1", 400, 4)
    assert (part.scale_out.fabric, part.scale_out.gbit_s) == ("RoCE", 200)
    assert part.capacity_gib is None and part.gpus_per_node is None  # optional: the planner falls back


def test_every_part_a_user_asks_about_is_listed_with_its_links():
    tables = load_reference_tables()
    assert set(tables.gpus) >= {"A100", "H100", "H200", "H800", "H20", "B200", "B300", "GB200", "GB300", "MI300X",
                                "MI325X", "MI355X"}
    assert resolve_gpu("A100-SXM4-40GB", tables) == ("A100", "A100-SXM4-40GB")
    full, held = tables.variants["B200-SXM-180GB"], tables.variants["B200-SXM-180GB-750W"]
    assert tables.gpus["B200"] is full and (full.power_w, held.power_w) == (1000, 750)
    assert [getattr(held, c) for c in ("peak_bf16_flops", "peak_fp8_flops", "peak_nvfp4_flops")] == [
        getattr(full, c) for c in ("peak_bf16_flops", "peak_fp8_flops", "peak_nvfp4_flops")]
    assert tables.gpus["MI300X"].peak_bf16_flops == 1.3074e15
    assert tables.gpus["H800"].scale_up.gb_s == 400 and tables.gpus["H800"].peak_bf16_flops == 989e12
    assert tables.gpus["GB200"].scale_up.domain == 72 and tables.gpus["GB200"].gpus_per_node == 4
    assert tables.gpus["H100"].capacity_gib == 79.65 and tables.gpus["H100"].scale_out.gbit_s == 400
