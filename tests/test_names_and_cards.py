"""Every name a user passes stays a name: `record --name` and its run folders are plain names inside the catalog,
and model cards come in whole pairs: `model add` never replaces another card's config, and every command refuses a
card whose config.sha256 is not its config's (a hand edit, or a kill between model add's two renames) or two cards of
one model."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import REPO, openrecipes

CATALOG_PARTS = ("models", "hardware", "recipes/qwen3-8b", "runs/qwen3-8b-h200x2-torchtitan-stock",
                 "runs/reproductions/qwen3-8b-h200x2-rerun-20261130")
STOCK_8B = "recipes/qwen3-8b/h200/torchtitan-stock-fsdp2.yaml"


@pytest.fixture
def catalog(tmp_path: Path) -> Path:
    for part in CATALOG_PARTS:
        shutil.copytree(REPO / part, tmp_path / "catalog" / part)
    shutil.copytree(REPO / CATALOG_PARTS[-1] / "stock", tmp_path / "catalog/runs/my-run")
    return tmp_path / "catalog"


def _one_error_line(result) -> str:
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


@pytest.mark.parametrize("name", ["../../../../escaped", "a/b", "..", ".hidden", "-x", "x..y", "a\nb", "a b",
                                  "x" * 101, "nul\0", "ünï"])
def test_record_refuses_a_name_that_is_not_a_plain_name_and_writes_nothing(catalog, name):
    before = sorted(p for p in catalog.parent.rglob("*"))
    result = openrecipes("record", "runs/my-run", "--like", STOCK_8B, "--name", name, cwd=catalog)
    assert "--name" in _one_error_line(result)
    assert sorted(p for p in catalog.parent.rglob("*")) == before


def test_record_refuses_a_run_folder_outside_the_catalogs_runs(catalog, tmp_path):
    shutil.copytree(catalog / "runs/my-run", tmp_path / "loose-run")
    result = openrecipes("record", tmp_path / "loose-run", "--like", STOCK_8B, "--name", "fine", cwd=catalog)
    assert "runs/" in _one_error_line(result)
    assert not list(catalog.rglob("fine.yaml"))


@pytest.fixture
def models(tmp_path: Path) -> Path:
    shutil.copytree(REPO / "models", tmp_path / "models")
    return tmp_path / "models"


def test_model_add_refuses_to_replace_another_cards_config(models):
    config = models / "configs/qwen3-8b.json"
    before = config.read_bytes()
    result = openrecipes("model", "add", REPO / "models/configs/mixtral-8x7b.json", "--name", "qwen3-8b",
                         "--out", models / "other.yaml")
    assert "already the card of qwen3-8b" in _one_error_line(result)
    assert config.read_bytes() == before and not (models / "other.yaml").exists()


def test_model_add_derives_its_own_card_again(models):
    result = openrecipes("model", "add", models / "configs/qwen3-8b.json", "--name", "qwen3-8b",
                         "--out", models / "qwen3-8b.yaml")
    assert result.returncode == 0, result.stderr


def _catalog_with(models: Path) -> Path:
    root = models.parent
    shutil.copytree(REPO / "hardware", root / "hardware")
    (root / "recipes").mkdir()
    return root


def test_a_card_whose_config_is_not_its_own_is_refused(models):
    config = models / "configs/qwen3-8b.json"
    config.write_text(config.read_text() + " ")  # what a kill between model add's renames, or a hand edit, leaves
    line = _one_error_line(openrecipes("validate", "--catalog", _catalog_with(models)))
    assert "qwen3-8b.yaml" in line and "config.sha256" in line and "model add" in line


@pytest.mark.parametrize("make", [lambda p: p.symlink_to("/dev/zero"), lambda p: __import__("os").mkfifo(p),
                                  lambda p: p.symlink_to(REPO / "models/configs/qwen3-8b.json")])
def test_a_card_config_that_is_a_fifo_or_a_link_out_is_refused_unread(models, make):
    config = models / "configs/qwen3-8b.json"
    config.unlink()
    make(config)
    assert "configs/qwen3-8b.json" in _one_error_line(openrecipes("validate", "--catalog", _catalog_with(models)))


def test_two_cards_of_one_model_are_refused(models):
    shutil.copy(models / "qwen3-8b.yaml", models / "qwen3-8b-again.yaml")
    line = _one_error_line(openrecipes("validate", "--catalog", _catalog_with(models)))
    assert "'qwen3-8b' is also the name of" in line
