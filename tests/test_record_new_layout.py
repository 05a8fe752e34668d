"""Contributing a layout the catalog lacks: `record` reads the layout from the run's own command (a stored run of
full recompute with two rows a microbatch, which no Qwen3-1.7B recipe has), and `refresh` says which derived file a
new recipe makes stale and rewrites the planner's calibration by code. The whole path as CONTRIBUTING.md writes it
is walked by tests/test_docs.py."""

from __future__ import annotations

import json
import shutil

import pytest
import yaml
from conftest import REPO, openrecipes

from openrecipes.errors import UserError
from openrecipes.plan.constants import HERE
from openrecipes.refresh import recorded_values, run_step, with_fitted_values

FIXTURE = REPO / "tests/fixtures/contributed-run"
BASE = "recipes/qwen3-1.7b/h200/openrecipes-compile-noac-mb4.yaml"


@pytest.fixture
def catalog(tmp_path):
    for name in ("recipes", "models", "hardware", "rules", "schema", "runs", "plans", "data"):
        shutil.copytree(REPO / name, tmp_path / name)
    shutil.copytree(FIXTURE / "candidate", tmp_path / "runs/mine")
    shutil.copytree(FIXTURE / "reference", tmp_path / "runs/stock")
    return tmp_path


def test_record_writes_a_recipe_of_the_runs_own_layout(catalog):
    done = openrecipes("record", "runs/mine", "--reference", "runs/stock", "--like", BASE, "--name", "full-mb2",
                       cwd=catalog)
    assert done.returncode == 0, done.stderr
    recipe = yaml.safe_load((catalog / "recipes/qwen3-1.7b/h200/full-mb2.yaml").read_text())
    layout = recipe["layout"]
    assert (layout["rows_per_microbatch"], layout["recompute"]["granularity"], layout["compile"]) == (2, "full", True)
    assert layout["max_tokens_per_gpu"] == 16384 and layout["label"] == "TP1 PP1 DP1"
    assert recipe["run"] == (FIXTURE / "candidate/command.sh").read_text()
    assert recipe["correctness"]["result"] == "pass" and recipe["result"]["steps_per_run"] == 10
    assert openrecipes("validate", cwd=catalog).returncode == 0
    audited = json.loads(openrecipes("audit", "--json", cwd=catalog).stdout)
    assert all(r["ok"] for r in audited)
    mine = next(r for r in audited if r["path"].endswith("full-mb2.yaml"))
    assert mine["evidence"] == "re-derived"


def test_a_new_recipe_makes_the_plans_stale_and_says_so(catalog):
    assert run_step("plans", catalog, check=True, sample=0).stale is None  # seals only: no plan computed again
    openrecipes("record", "runs/mine", "--reference", "runs/stock", "--like", BASE, "--name", "full-mb2", cwd=catalog)
    stale = run_step("plans", catalog, check=True, sample=0).stale
    assert stale is not None and "qwen3-1.7b" in stale


def test_calibration_is_written_by_code_keeping_every_comment():
    text = (HERE / "calibration.yaml").read_text(encoding="utf-8")
    assert with_fitted_values(text, recorded_values(text)) == text  # the file is exactly what the writer writes
    moved = {name: value * 1.5 for name, value in recorded_values(text).items()}
    written = with_fitted_values(text, moved)
    assert recorded_values(written) == pytest.approx(moved, rel=1e-3)
    assert [line for line in written.splitlines() if line.lstrip().startswith("#")] == [
        line for line in text.splitlines() if line.lstrip().startswith("#")]
    with pytest.raises(UserError, match="no fitted entry for new_value; add one under fitted:"):
        with_fitted_values(text, {**moved, "new_value": 1.0})


def test_refresh_check_names_the_stale_file_and_the_command(catalog, monkeypatch):
    """A clone whose plans/ an edit made stale: exit 1, the file named, the one command that fixes it. Only the
    plans step runs here (the planner's refits take seconds; CI's `openrecipes refresh --check` and CONTRIBUTING's
    walk in tests/test_docs.py run all three)."""
    monkeypatch.setattr("openrecipes.refresh.STEPS", ("plans",))
    plan = catalog / "plans/qwen3-8b.json"
    plan.write_text(plan.read_text().replace('"fingerprint": "', '"fingerprint": "0', 1))
    done = openrecipes("refresh", "--check", "--sample", "0", cwd=catalog)
    assert done.returncode == 1
    assert done.stdout == f"{catalog / 'plans'}: stale: qwen3-8b.json (not a plan file the export wrote)\n"
    assert "run `openrecipes refresh`" in done.stderr
    assert "0" + json.loads((REPO / "plans/qwen3-8b.json").read_text())["fingerprint"] in plan.read_text()  # unwritten


def test_a_run_of_another_model_is_refused_in_one_line(catalog):
    done = openrecipes("record", "runs/mine", "--reference", "runs/stock", "--like",
                       "recipes/qwen3-8b/h200/openrecipes-fsdp2-compile-noac-mb1.yaml", "--name", "wrong", cwd=catalog)
    assert done.returncode == 2
    assert "the run trains torchtitan's qwen3 1.7B but the --like recipe is qwen3-8b" in done.stderr
    assert not (catalog / "recipes/qwen3-8b/h200/wrong.yaml").exists()
