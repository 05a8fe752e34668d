"""A run that explains itself: before torchrun starts, `run` checks torchtitan, the CUDA GPUs and the rows file
(with its sha256), each failure one sentence with its fix on one line; a failed attempt's folder is reused with
--overwrite, a published run's never."""

from __future__ import annotations

import os
import shutil
import stat
import time

import pytest
from conftest import REPO, openrecipes

from openrecipes.errors import UserError
from openrecipes.launch.cli import _recipe_and_launch
from openrecipes.launch.execute import ATTEMPT, execute, prepare_run_dir

RECIPE = REPO / "recipes/qwen3-1.7b/h200/openrecipes-compile-noac-mb4.yaml"


def test_run_says_what_is_missing_before_it_starts(tmp_path):
    started = time.monotonic()
    done = openrecipes("run", RECIPE, "--out", tmp_path / "try", cwd=tmp_path)
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1
    line = done.stderr
    if shutil.which("nvidia-smi") is None:
        assert "this machine shows 0" in line and "1 GPUs" in line
    assert ("no rows at .data/qwen3-rows/rows.parquet: build them with `openrecipes rows demo --out "
            ".data/qwen3-rows") in line
    try:
        import torchtitan  # noqa: F401
    except ImportError:
        assert "torchtitan is not importable (install the gpu extra" in line
    assert not (tmp_path / "try").exists()  # nothing to delete before the next try
    assert time.monotonic() - started < 30


def test_rows_of_another_build_are_named(tmp_path):
    rows = tmp_path / ".data/qwen3-rows/rows.parquet"
    rows.parent.mkdir(parents=True)
    rows.write_bytes(b"not these rows")
    done = openrecipes("run", RECIPE, "--out", tmp_path / "try", cwd=tmp_path)
    assert "has sha256" in done.stderr and "the recipe's rows de04967ecf5e" in done.stderr


def _failed_attempt(folder):
    folder.mkdir(parents=True)
    (folder / "train.log").write_text("boom\n")
    (folder / ATTEMPT).write_text("failed: torchrun exited with 1\n")
    return folder


def test_a_failed_attempt_is_reused_only_with_overwrite(tmp_path):
    folder = _failed_attempt(tmp_path / "runs/try")
    with pytest.raises(UserError, match="holds a failed attempt .*add --overwrite"):
        prepare_run_dir(folder, REPO, overwrite=False)
    prepare_run_dir(folder, REPO, overwrite=True)
    assert list(folder.iterdir()) == []


def test_a_published_run_is_never_written_over(tmp_path):
    foreign = tmp_path / "runs/published"
    shutil.copytree(REPO / "runs/qwen3-1.7b-h200-torchtitan-stock", foreign)
    with pytest.raises(UserError, match="not a failed attempt"):
        prepare_run_dir(foreign, REPO, overwrite=True)
    (foreign / ATTEMPT).write_text("failed\n")  # even marked, a log a recipe pins stays
    with pytest.raises(UserError, match="pinned by a recipe"):
        prepare_run_dir(foreign, REPO, overwrite=True)
    assert (foreign / "train.log").exists()


def test_torchrun_failing_names_its_last_line_and_the_retry(tmp_path, monkeypatch):
    """A stand-in torchrun that fails as a missing torchtitan does: the message carries the log's last line, the
    folder is marked a failed attempt, and --overwrite runs into it again."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "torchrun"
    fake.write_text("#!/bin/sh\necho 'starting'\necho \"ModuleNotFoundError: No module named 'torchtitan'\"\nexit 1\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    _, _, launch = _recipe_and_launch(RECIPE, 2)
    out = tmp_path / "runs/try"
    for overwrite in (False, True):
        with pytest.raises(UserError, match="torchrun exited with 1: ModuleNotFoundError: No module named "
                                            "'torchtitan' .*--overwrite"):
            execute(launch, out, tokens_per_step=1, catalog=REPO, overwrite=overwrite)
        assert (out / ATTEMPT).read_text().startswith("failed")
        assert (out / "command.sh").read_text() == launch.script()
