"""What a user pastes and reads at a real terminal width: a command is printed byte for byte (never re-wrapped, so
an exported variable never lands on a line of its own), and the tables fit 80 columns without cutting a name or
the figure they rank by; `list` and `show` also speak JSON."""

from __future__ import annotations

import json

import pytest
import yaml
from conftest import GLM_16K, GPTOSS_1, REPO, openrecipes
from rich.cells import cell_len

QWEN8B = REPO / "recipes/qwen3-8b/h200/openrecipes-fsdp2-compile-noac-mb1.yaml"


def run_text(path) -> str:
    return yaml.safe_load(path.read_text(encoding="utf-8"))["run"]


@pytest.mark.parametrize("columns", [60, 80])
@pytest.mark.parametrize("recipe", [GPTOSS_1, QWEN8B, GLM_16K], ids=["slime", "torchtitan", "glm"])
def test_show_prints_the_recipes_command_byte_for_byte(recipe, columns):
    done = openrecipes("show", recipe, columns=columns)
    assert done.returncode == 0, done.stderr
    assert run_text(recipe) in done.stdout


@pytest.mark.parametrize("columns", [60, 80])
def test_dry_run_prints_the_recipes_command_byte_for_byte(columns):
    for recipe in (GPTOSS_1, QWEN8B):
        done = openrecipes("run", recipe, "--dry-run", columns=columns)
        assert done.returncode == 0, done.stderr
        assert run_text(recipe) in done.stdout


def test_show_keeps_the_export_with_its_command():
    """The seed's run script exports PYTORCH_CUDA_ALLOC_CONF on one long line; wrapped at 80 columns it became a
    line of its own, a plain assignment the pasted command no longer exported."""
    out = openrecipes("show", GPTOSS_1, columns=80).stdout
    assert not any(line.strip().startswith("PYTORCH_CUDA_ALLOC_CONF") for line in out.splitlines())


def _fits(text: str, width: int) -> None:
    wide = [line for line in text.splitlines() if cell_len(line) > width]
    assert not wide, wide


def test_list_fits_80_columns_with_every_name_and_figure_whole():
    done = openrecipes("list", columns=80)
    assert done.returncode == 0, done.stderr
    _fits(done.stdout, 80)
    boards = json.loads(openrecipes("list", "--json").stdout)["boards"]
    lines = done.stdout.splitlines()
    for board in boards:
        for row in board["recipes"]:
            assert any(line.split()[-1:] == [row["name"]] for line in lines), row["name"]
            assert f"{row['tokens_per_s_per_gpu']:,.1f} tokens/s per GPU" in done.stdout, row["name"]


def test_audit_fits_80_columns_and_tells_the_glm_recipes_apart():
    done = openrecipes("audit", columns=80)
    assert done.returncode == 0, done.stderr
    _fits(done.stdout, 80)
    for path in (REPO / "recipes").rglob("*.yaml"):
        assert any(line.split()[-1:] == [path.name] for line in done.stdout.splitlines()), path
    glm = [line.split()[-1] for line in done.stdout.splitlines() if "attune-tp4-pp2" in line]
    assert len(set(glm)) == 3


def test_list_json_is_every_board_ranked():
    data = json.loads(openrecipes("list", "--json").stdout)
    board = next(b for b in data["boards"] if b["model"] == "qwen3-8b")
    assert [r["rank"] for r in board["recipes"]] == [1, 2]
    speeds = [r["tokens_per_s_per_gpu"] for r in board["recipes"]]
    assert speeds == sorted(speeds, reverse=True)
    assert {"row_tokens", "global_batch", "precision"} <= set(board)
    assert any(s["slug"] == "llama-3.1-8b/h100/published-summary" for s in data["summaries"])


def test_show_json_is_the_recipe_as_written():
    data = json.loads(openrecipes("show", QWEN8B, "--json").stdout)
    written = yaml.safe_load(QWEN8B.read_text(encoding="utf-8"))
    assert data["path"] == "recipes/qwen3-8b/h200/openrecipes-fsdp2-compile-noac-mb1.yaml"
    assert data["recipe"]["run"] == written["run"]
    assert data["recipe"]["result"]["tokens_per_s_per_gpu"] == written["result"]["tokens_per_s_per_gpu"]


def test_validate_fits_80_columns_with_every_file_name_whole():
    done = openrecipes("validate", columns=80)
    assert done.returncode == 0, done.stderr
    _fits(done.stdout, 80)
    for path in (REPO / "recipes").rglob("*.yaml"):
        assert f"  ok      {path.name}" in done.stdout, path


def test_launch_prints_the_same_script_at_any_width():
    narrow = openrecipes("launch", QWEN8B, "--slurm", columns=60)
    wide = openrecipes("launch", QWEN8B, "--slurm", columns=250)
    assert narrow.returncode == 0 and narrow.stdout == wide.stdout
