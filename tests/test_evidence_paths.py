"""Evidence stays inside the catalog, and a reproduction is a new run.

Every log a recipe cites (runs.candidate/reference, reproductions[].log) is relative, lies under the catalog's
runs/ after links are followed, and is a regular file: `validate` names the field of any other, `audit` never
follows it (and never ends in a traceback). A reproduction's log is none of the logs the recipe already cites (not
its bytes, not its timestamps, not its step times): `reproduce --write` refuses it and `audit` re-checks each one.
A link under recipes/ that loops or leads nowhere is refused, not skipped."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import REPO, openrecipes
from test_audit_reproduce_record import another_run

OURS_8B = "recipes/qwen3-8b/h200/openrecipes-fsdp2-compile-noac-mb1.yaml"
CANDIDATE = "runs/qwen3-8b-h200x2-openrecipes-fsdp2-compile-noac-mb1"
RERUN = "runs/reproductions/qwen3-8b-h200x2-rerun-20261130"


@pytest.fixture
def catalog(tmp_path: Path) -> Path:
    root = tmp_path / "catalog"
    for folder in ("models", "hardware", "recipes/qwen3-8b", CANDIDATE, "runs/qwen3-8b-h200x2-torchtitan-stock",
                   "runs/reproductions"):
        shutil.copytree(REPO / folder, root / folder)
    return root


def _edit(recipe: Path, old: str, new: str) -> None:
    text = recipe.read_text(encoding="utf-8")
    assert old in text
    recipe.write_text(text.replace(old, new, 1), encoding="utf-8")


def _refused(catalog: Path, field: str) -> None:
    """validate and audit both exit 1 naming `field`, with no traceback."""
    for command in (["validate", "--catalog", catalog], ["audit", "--catalog", catalog]):
        result = openrecipes(*command, cwd=catalog)
        assert result.returncode == 1, f"{command[0]}: exit {result.returncode}\n{result.stdout}{result.stderr}"
        assert field in result.stdout + result.stderr, result.stdout


@pytest.mark.parametrize("path", ["/etc", "../../../etc", "runs/../../outside", "models"])
def test_a_runs_folder_outside_runs_is_refused(catalog, path):
    _edit(catalog / OURS_8B, f"candidate: {CANDIDATE}", f"candidate: {path}")
    _refused(catalog, "runs.candidate")


def test_an_absolute_path_to_a_real_log_elsewhere_is_refused(catalog, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(catalog / CANDIDATE, elsewhere)
    _edit(catalog / OURS_8B, f"candidate: {CANDIDATE}", f"candidate: {elsewhere}")
    _refused(catalog, "runs.candidate")


def test_a_link_under_runs_that_leads_out_is_refused(catalog, tmp_path):
    shutil.copytree(catalog / CANDIDATE, tmp_path / "outside")
    shutil.rmtree(catalog / CANDIDATE)
    (catalog / CANDIDATE).symlink_to(tmp_path / "outside")
    _refused(catalog, "runs.candidate")


def test_a_train_log_that_is_a_folder_is_refused(catalog):
    log = catalog / CANDIDATE / "train.log"
    log.unlink()
    log.mkdir()
    _refused(catalog, "runs.candidate")


@pytest.mark.parametrize("path", ["../../../etc/passwd", "/etc/passwd", "recipes/qwen3-8b/h200/x.log"])
def test_a_reproduction_log_outside_runs_is_refused(catalog, path):
    _edit(catalog / OURS_8B, f"log: {RERUN}/ours/train.log", f"log: {path}")
    _refused(catalog, "reproductions.0.log")


def test_a_link_loop_under_recipes_is_refused_with_its_name(catalog):
    loop = catalog / "recipes/qwen3-8b/h200/loop.yaml"
    loop.symlink_to(loop)
    result = openrecipes("validate", "--catalog", catalog, cwd=catalog)
    assert result.returncode == 2 and "loop.yaml" in result.stderr, result.stderr


@pytest.mark.parametrize("copy", ["the candidate's log", "the candidate's log with a line added",
                                  "an earlier reproduction's log"])
def test_reproduce_write_refuses_a_log_the_recipe_already_cites(catalog, copy):
    source = catalog / (RERUN + "/ours/train.log" if copy.startswith("an earlier") else CANDIDATE + "/train.log")
    mine = catalog / "runs/reproductions/mine/train.log"
    mine.parent.mkdir(parents=True)
    shutil.copy(source, mine)
    if copy.endswith("line added"):  # other bytes, the same run: its timestamps give it away
        mine.write_text(mine.read_text(encoding="utf-8") + "an added line\n", encoding="utf-8")
    before = (catalog / OURS_8B).read_bytes()
    result = openrecipes("reproduce", catalog / OURS_8B, mine, "--write", "--by", "someone")
    assert result.returncode == 2 and "a reproduction is a new run" in result.stderr, result.stderr
    assert (catalog / OURS_8B).read_bytes() == before


def test_reproduce_write_accepts_a_new_run(catalog):
    mine = another_run(catalog / CANDIDATE / "train.log", catalog / "runs/reproductions/mine/train.log")
    result = openrecipes("reproduce", catalog / OURS_8B, mine, "--write", "--by", "someone")
    assert result.returncode in (0, 1), result.stderr
    assert "by: someone" in (catalog / OURS_8B).read_text(encoding="utf-8")
    assert openrecipes("audit", "--catalog", catalog, cwd=catalog).returncode == 0


def test_audit_finds_a_stored_reproduction_that_is_the_candidate_log(catalog):
    """Written by hand (not through `reproduce --write`): the entry re-derives, but it is no new run."""
    shutil.copy(catalog / CANDIDATE / "train.log", catalog / RERUN / "ours/train.log")
    result = openrecipes("reproduce", catalog / OURS_8B, catalog / RERUN / "ours/train.log", "--json")
    assert result.returncode in (0, 1)
    audited = openrecipes("audit", "--catalog", catalog, cwd=catalog)
    assert audited.returncode == 1 and "reproductions.0.log" in audited.stdout and "new run" in audited.stdout


def test_two_entries_with_one_log_are_refused_by_validate(catalog):
    text = (catalog / OURS_8B).read_text(encoding="utf-8")
    entry = text[text.index("reproductions:\n") + len("reproductions:\n"):]
    (catalog / OURS_8B).write_text(text + entry, encoding="utf-8")
    _refused(catalog, "reproductions.1.log_sha256")
