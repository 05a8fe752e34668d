"""`openrecipes measure` and `openrecipes check ...` as a user runs them: JSON contracts and exit codes 0 / 1 / 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import GLM_16K, GPTOSS_1, REPO, openrecipes
from typer.testing import CliRunner

from openrecipes.verify.cli import check_app

LOGS = REPO / "tests/fixtures/logs"
SLIME_GPTOSS_1 = LOGS / "slime-gpt-oss-20b-attune-tp1-pp1-ep4.log"


run = openrecipes


def assert_one_line_error(result: subprocess.CompletedProcess, text: str) -> None:
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.startswith("error: ") and text in result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


def test_measure_json_contract():
    result = run("measure", SLIME_GPTOSS_1, "--recipe", GPTOSS_1, "--json")
    assert result.returncode == 0, result.stderr
    block = json.loads(result.stdout)
    assert {"tokens_per_s_per_gpu", "step_time_cv_percent", "mfu", "usd_per_million_tokens", "window",
            "window_tokens", "gpu_hours"} <= set(block)
    assert block["tokens_per_s_per_gpu"] == 10483.91 and block["window"] == [5, 19]


@pytest.mark.parametrize("args, text", [
    (("measure", LOGS / "openrecipes-3-steps.jsonl", "--window", "0", "9"), "outside the run's steps 0-2"),
    (("measure", REPO / "pyproject.toml", "--window", "0", "1"), "no training step lines of a known format"),
    (("measure", SLIME_GPTOSS_1, "--write"), "--write needs --recipe"),
])
def test_measure_bad_input_exit_2(args, text):
    assert_one_line_error(run(*args), text)


def test_check_convergence_exit_codes(tmp_path):
    reference, shifted, nan = (tmp_path / name for name in ("reference.csv", "shifted.csv", "nan.csv"))
    losses = [2.6 - 0.07 * s for s in range(20)]
    reference.write_text("step,loss\n" + "".join(f"{s},{v}\n" for s, v in enumerate(losses)))
    shifted.write_text("".join(f"{s},{v * 1.02}\n" for s, v in enumerate(losses)))
    nan.write_text("".join(f"{s},{'nan' if s == 9 else v}\n" for s, v in enumerate(losses)))

    passed = run("check", "convergence", "--candidate", shifted, "--reference", reference, "--json")
    assert passed.returncode == 0, passed.stderr
    verdict = json.loads(passed.stdout)
    assert {"passed", "correlation", "final_loss_difference", "pointwise_failures", "total_points",
            "failed_metrics"} <= set(verdict)
    strict = run("check", "convergence", "--candidate", shifted, "--reference", reference, "--placement-only")
    assert strict.returncode == 1 and "placement-only step-for-step: fail" in strict.stdout
    failed = run("check", "convergence", "--candidate", nan, "--reference", reference)
    assert failed.returncode == 1 and "step 9 is nan" in failed.stdout
    assert_one_line_error(run("check", "convergence", "--candidate", tmp_path / "absent.csv", "--reference",
                              reference), "cannot read")


def test_check_config_exit_codes():
    placement = run("check", "config", "--candidate", REPO / "recipes/gpt-oss-20b/h200/attune-tp1-pp2-ep4.yaml",
                    "--reference", REPO / "tests/fixtures/config/gpt-oss-20b-megatron-bridge-reference.sh", "--json")
    assert placement.returncode == 0, placement.stderr
    verdict = json.loads(placement.stdout)
    assert verdict["result"] == "pass" and verdict["placement_only"]
    assert set(verdict["changes"][0]) >= {"argument", "reference", "candidate", "class"}
    glm_12k = REPO / "recipes/glm-5.2-744b-a40b/b200/attune-tp4-pp2-cp4-mt12k.yaml"
    numerics = run("check", "config", "--candidate", glm_12k, "--reference", GLM_16K)
    assert numerics.returncode == 1 and "--num-rollout changes the numerics" in numerics.stdout


def test_component_command(torch):
    # In-process: torch is already imported by the component tests, a subprocess would import it again.
    result = CliRunner().invoke(check_app, ["component", "optimizer-offload", "--shape", "small"])
    assert result.exit_code == 0, result.output
    assert "optimizer-offload at small on cpu" in result.output and "the negative controls fail" in result.output


@pytest.mark.slow  # a fresh interpreter imports torch and runs all five arms again: seconds of CPU
def test_component_runs_with_torch_alone():
    pytest.importorskip("torch")
    # The GPU machine may have nothing but torch: block the CLI and catalog stack, run the module itself.
    block = ("import runpy, sys; sys.modules.update(dict.fromkeys(['pydantic', 'typer', 'rich', 'yaml', 'numpy'])); "
             "sys.argv = ['optimizer_offload', '--shape', 'small', '--json']; "
             "runpy.run_module('openrecipes.verify.components.optimizer_offload', run_name='__main__')")
    result = subprocess.run([sys.executable, "-c", block], capture_output=True, text=True, cwd=REPO,
                            env={**os.environ, "COLUMNS": "250"})
    assert result.returncode == 0, result.stderr
    verdict = json.loads(result.stdout)
    assert verdict["passed"] and verdict["shape"] == "small" and len(verdict["arms"]) == 5
