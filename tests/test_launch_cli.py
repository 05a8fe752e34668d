"""`openrecipes run`: dry run, and a whole run through a stand-in torchrun (`launch --slurm`: test_launch_slurm*.py)."""

from __future__ import annotations

import csv

from conftest import GPTOSS_1, REPO
from typer.testing import CliRunner

from openrecipes.cli import app
from openrecipes.errors import UserError

QWEN3_8B = REPO / "recipes/qwen3-8b/h200/openrecipes-fsdp2-compile-noac-mb1.yaml"
runner = CliRunner()


def test_dry_run_prints_the_command_with_the_log_options():
    result = runner.invoke(app, ["run", str(QWEN3_8B), "--dry-run", "--steps", "3"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1")
    assert ("torchrun --nnodes 1 --nproc_per_node 2 --local-ranks-filter 0 --role rank --tee 3 "
            "-m openrecipes.launch.torchtitan.train") in result.output
    assert "--training.steps 3 \\" in result.output
    assert '"--compile.enable": []' in result.output


def test_slime_recipes_dry_run_only():
    dry = runner.invoke(app, ["run", str(GPTOSS_1), "--dry-run"])
    assert dry.exit_code == 0
    assert "--expert-model-parallel-size 4" in dry.output and "python3 -m <slime entry module>" in dry.output
    refused = runner.invoke(app, ["run", str(GPTOSS_1)])
    assert isinstance(refused.exception, UserError) and "seeds' cluster" in str(refused.exception)


def _stand_in_torchrun(folder, steps, monkeypatch):
    """A torchrun that prints a run's log; it needs no torchtitan, GPU or rows, so run's checks before it starts
    (tests/test_run_checks.py) are passed over."""
    monkeypatch.setattr("openrecipes.launch.preflight.check_can_run", lambda *args: None)
    lines = ["[rank0]:[titan] 2026-11-30 01:00:00,000 - root - INFO - Training starts at step 1"]
    lines += [f"[rank0]:[titan] 2026-11-30 01:00:{10 + 2 * s:02d},000 - root - INFO - step: {s:2d}  "
              f"loss: {12 - 0.3 * s:.5f}"
              f"  grad_norm:  1.0000  memory: 100.00GiB(70.00%)  tps: 9,000  tflops: 500.00  mfu: 50.00%"
              for s in range(1, steps + 1)]
    script = folder / "torchrun"
    script.write_text("#!/bin/sh\ncat <<'LOG'\n" + "\n".join(lines) + "\nLOG\n")
    script.chmod(0o755)


def test_run_keeps_the_raw_log_and_the_steps_csv(tmp_path, monkeypatch):
    _stand_in_torchrun(tmp_path, 20, monkeypatch)
    monkeypatch.setenv("PATH", f"{tmp_path}:{__import__('os').environ['PATH']}")
    monkeypatch.chdir(REPO)  # the recipe's reference arm lies under runs/
    out = tmp_path / "run"
    result = runner.invoke(app, ["run", str(QWEN3_8B), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "Training starts" in (out / "train.log").read_text()
    with (out / "steps.csv").open() as source:
        rows = list(csv.reader(source))
    assert rows[0] == ["step", "loss", "step_time"]
    assert rows[1][:2] == ["0", "11.7"] and float(rows[2][2]) == 2.0 and len(rows) == 21
    assert "tokens_per_s_per_gpu" in result.output and "convergence against" in result.output
    again = runner.invoke(app, ["run", str(QWEN3_8B), "--out", str(out)])
    assert isinstance(again.exception, UserError) and "exists" in str(again.exception)


def test_run_with_fewer_steps_is_measured_over_the_window_clipped_into_it(tmp_path, monkeypatch):
    # --steps 10 of a 20-step recipe: the log ends at step 9, which is the whole run, not a truncated one.
    _stand_in_torchrun(tmp_path, 10, monkeypatch)
    monkeypatch.setenv("PATH", f"{tmp_path}:{__import__('os').environ['PATH']}")
    monkeypatch.chdir(REPO)
    result = runner.invoke(app, ["run", str(QWEN3_8B), "--steps", "10", "--out", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    assert '"steps_per_run": 10' in result.output and '"window": [\n    5,\n    9\n  ]' in result.output
    assert "the recipe's window [5, 19] clipped into this 10-step run: [5, 9]" in result.output


def test_run_finds_the_reference_arm_under_the_recipes_catalog_from_any_folder(tmp_path, monkeypatch):
    _stand_in_torchrun(tmp_path, 20, monkeypatch)
    monkeypatch.setenv("PATH", f"{tmp_path}:{__import__('os').environ['PATH']}")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # no runs/ here: the reference arm is the catalog's, REPO/runs/...
    result = runner.invoke(app, ["run", str(QWEN3_8B), "--out", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    reference = REPO / "runs/qwen3-8b-h200x2-torchtitan-stock/train.log"
    assert f"convergence against {reference}" in result.output.replace("\n", "")
