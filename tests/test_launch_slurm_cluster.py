"""`openrecipes launch --slurm --submit` under a real Slurm: scripts/slurm-local.sh's two nodes on this machine, the
probe entry (gloo on CPU) in place of training, 2 nodes x 2 ranks (2 x 1 where the ranks' layout does not matter).
Slurm missing is a skip on a laptop, a failure in CI (CI=true), where .ci/run brings it up first."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import REPO, openrecipes
from test_launch_slurm import two_node_recipe

SLURM_LOCAL = REPO / "scripts/slurm-local.sh"
ENDED = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED", "BOOT_FAIL"}
pytestmark = pytest.mark.slow


def _local_env() -> dict[str, str]:
    """The environment after sourcing `slurm-local.sh env` (SLURM_CONF, PATH, LD_LIBRARY_PATH)."""
    done = subprocess.run(["bash", "-c", f'eval "$({SLURM_LOCAL} env)" && env -0'], capture_output=True, text=True,
                          check=True)
    return dict(line.split("=", 1) for line in done.stdout.split("\0") if "=" in line)


def _answers(env: dict[str, str]) -> bool:
    """Whether the local Slurm answers (without a config file, scontrol would first wait on a DNS lookup)."""
    scontrol = shutil.which("scontrol", path=env["PATH"])
    return scontrol is not None and Path(env["SLURM_CONF"]).exists() and "is UP" in subprocess.run(
        [scontrol, "ping"], env=env, capture_output=True, text=True).stdout


@pytest.fixture(scope="module")
def slurm(tmp_path_factory) -> Iterator[Path]:
    """A catalog folder to submit from, with a local Slurm answering (brought up here if it was not; then taken
    down after)."""
    root = os.environ.get("SLURM_ROOT", "")
    if not any(Path(root or "/", "usr/sbin", name).exists() for name in ("slurmctld", "slurmctld-wlm")):
        missing = "Slurm is not installed (scripts/setup.sh test installs it) and SLURM_ROOT names no unpacked tree"
        if os.environ.get("CI") == "true":
            pytest.fail(missing)
        pytest.skip(missing)
    was_up = _answers(_local_env())
    up = subprocess.run([SLURM_LOCAL, "up"], capture_output=True, text=True, timeout=90)
    assert up.returncode == 0, up.stderr
    with pytest.MonkeyPatch.context() as patch:
        for key, value in _local_env().items():
            patch.setenv(key, value)
        # The job runs `torchrun` and imports openrecipes from this checkout, through the environment sbatch copies.
        patch.setenv("PATH", f"{Path(sys.executable).parent}:{os.environ['PATH']}")
        patch.setenv("PYTHONPATH", str(REPO / "src"))
        yield tmp_path_factory.mktemp("slurm-catalog")
    if not was_up:
        subprocess.run([SLURM_LOCAL, "down"], check=True, timeout=60)


def _submit(catalog: Path, name: str, per_node: int = 2) -> str:
    recipe = two_node_recipe(catalog, name, per_node=per_node)
    result = openrecipes("launch", "--slurm", recipe.relative_to(catalog), "--probe", "gloo", "--submit", cwd=catalog)
    assert result.returncode == 0, result.stderr
    assert re.fullmatch(r"\d+\n", result.stdout)
    return result.stdout.strip()


def _job(job: str) -> dict[str, str]:
    shown = subprocess.run(["scontrol", "-o", "show", "job", job], capture_output=True, text=True, check=True).stdout
    return dict(word.split("=", 1) for word in shown.split() if "=" in word)


def _wait(job: str, seconds: float = 60) -> dict[str, str]:
    until = time.monotonic() + seconds
    while (state := _job(job))["JobState"] not in ENDED:
        assert time.monotonic() < until, f"job {job} still {state['JobState']} after {seconds} s"
        time.sleep(0.5)
    return state


def test_every_rank_starts_once_with_slurms_node_rank_and_the_group_sums(slurm):
    job = _submit(slurm, "ok.yaml")
    state = _wait(job)
    run = slurm / "runs/ok"
    assert (state["JobState"], state["ExitCode"]) == ("COMPLETED", "0:0"), (run / f"slurm-{job}.out").read_text()
    started: dict[int, dict[str, str]] = {}
    for node in (0, 1):
        for line in (run / f"train.node{node}.log").read_text().splitlines():
            if "openrecipes probe: rank=" in line and " world_size=" in line:
                fields = dict(word.split("=", 1) for word in line.split("openrecipes probe: ", 1)[1].split())
                rank = int(fields["rank"])
                assert rank not in started, f"rank {rank} started twice"
                started[rank] = {**fields, "log_node": str(node)}
            if " allreduce=" in line:
                assert line.endswith("allreduce=10 expected=10")  # 1+2+3+4 over one group of four
    assert sorted(started) == [0, 1, 2, 3]
    for rank, fields in started.items():
        assert fields["world_size"] == "4" and fields["local_rank"] == str(rank % 2)
        assert fields["node_rank"] == fields["slurm_nodeid"] == fields["log_node"] == str(rank // 2)
        assert fields["slurm_job_id"] == job and fields["slurm_nnodes"] == "2"
    result = json.loads((run / "probe.json").read_text())
    assert result["sums"] == [10, 10, 10] and [r["rank"] for r in result["ranks"]] == [0, 1, 2, 3]


def test_one_failed_rank_fails_the_job(slurm, monkeypatch):
    monkeypatch.setenv("OPENRECIPES_PROBE_FAIL_RANK", "1")  # on node 1 of 2 x 1 ranks (fewer processes: quicker)
    job = _submit(slurm, "fail.yaml", per_node=1)
    state = _wait(job)
    assert state["JobState"] == "FAILED" and state["ExitCode"] != "0:0"
    assert "rank=1 exits 1" in (slurm / "runs/fail/train.node1.log").read_text()
    assert not list((slurm / "runs/fail").glob("*probe.json*"))


def test_a_cancelled_job_leaves_no_result(slurm, monkeypatch):
    monkeypatch.setenv("OPENRECIPES_PROBE_HOLD", "60")
    job = _submit(slurm, "cancel.yaml", per_node=1)
    log = slurm / "runs/cancel/train.node0.log"
    until = time.monotonic() + 60
    while not (log.exists() and "round=0" in log.read_text()):
        assert time.monotonic() < until and _job(job)["JobState"] not in ENDED, "the probe never reached round 0"
        time.sleep(0.5)
    subprocess.run(["scancel", job], check=True)
    assert _wait(job, 30)["JobState"] == "CANCELLED"
    assert not list((slurm / "runs/cancel").glob("*probe.json*"))


def test_a_job_given_fewer_nodes_fails_at_once_saying_why(slurm):
    recipe = two_node_recipe(slurm, "short.yaml")
    script = slurm / "short.sbatch"
    assert openrecipes("launch", "--slurm", recipe.relative_to(slurm), "--probe", "gloo", "--out", script,
                       cwd=slurm).returncode == 0
    job = subprocess.run(["sbatch", "--parsable", "--nodes=1", str(script)], cwd=slurm, capture_output=True, text=True,
                         check=True).stdout.strip()
    state = _wait(job, 30)
    assert (state["JobState"], state["ExitCode"]) == ("FAILED", "2:0")
    said = (slurm / f"runs/short/slurm-{job}.out").read_text()
    assert f"the recipe needs 2 node(s) of 2 GPU(s), job {job} has 1" in said
    assert not (slurm / "runs/short/train.node0.log").exists()
