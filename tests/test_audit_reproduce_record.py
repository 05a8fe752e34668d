"""`openrecipes reproduce` and `openrecipes record` as a contributor runs them, on a copy of the catalog."""

from __future__ import annotations

import datetime
import json
import re
import shutil
from pathlib import Path

import pytest
from conftest import REPO, openrecipes
from typer.testing import CliRunner

from openrecipes.audit.review import audit
from openrecipes.catalog.store import load_recipe
from openrecipes.cli import app

OURS_8B = "recipes/qwen3-8b/h200/openrecipes-fsdp2-compile-noac-mb1.yaml"
STOCK_8B = "recipes/qwen3-8b/h200/torchtitan-stock-fsdp2.yaml"
RERUN = "runs/reproductions/qwen3-8b-h200x2-rerun-20261130"
runner = CliRunner()


@pytest.fixture
def catalog(tmp_path: Path) -> Path:
    for folder in ("models", "hardware", "recipes/qwen3-8b", "runs/qwen3-8b-h200x2-openrecipes-fsdp2-compile-noac-mb1",
                   "runs/qwen3-8b-h200x2-torchtitan-stock", "runs/reproductions"):
        shutil.copytree(REPO / folder, tmp_path / folder)
    return tmp_path


cli = openrecipes


def another_run(source: Path, target: Path) -> Path:
    """A log of another run of the same recipe: an hour later, each line a few milliseconds later than the one
    before it (so its step times are its own), the rest as the source."""
    started = datetime.datetime(2000, 1, 1)

    def later(match: re.Match) -> str:
        nonlocal started
        stamp = datetime.datetime.strptime(match.group(0), "%Y-%m-%d %H:%M:%S,%f")
        started = max(started, stamp) + datetime.timedelta(milliseconds=7)
        return (started + datetime.timedelta(hours=1)).strftime("%Y-%m-%d %H:%M:%S,%f")[:-3]

    text = source.read_text(encoding="utf-8")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(re.sub(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3}", later, text), encoding="utf-8")
    return target


def test_reproduce_prints_delta_band_convergence_and_stack(catalog):
    result = runner.invoke(app, ["reproduce", str(catalog / OURS_8B), str(catalog / RERUN / "ours/train.log"),
                                 "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["published_tokens_per_s_per_gpu"] == 9827.94 and out["tokens_per_s_per_gpu"] == 10017.53
    assert out["delta_percent"] == 1.93 and out["within_noise_band"] and out["noise_band_percent"] == 4.18
    assert out["convergence"]["result"] == "pass" and out["stack"]["nccl"] == "2.28.9"
    assert out["gpu"] == "NVIDIA H200" and out["window"] == [5, 19] and out["holds"]


def test_reproduce_outside_the_band_exits_1(catalog):
    # the stock arm's log measured against the faster recipe: 13% slow, far outside its band
    result = runner.invoke(app, ["reproduce", str(catalog / OURS_8B), str(catalog / RERUN / "stock/train.log")])
    assert result.exit_code == 1 and "OUTSIDE the noise band" in result.stdout


def test_reproduce_write_appends_an_entry_the_audit_re_derives(catalog):
    mine = another_run(catalog / RERUN / "ours/train.log", catalog / "runs/reproductions/mine/train.log")
    before = (catalog / OURS_8B).read_text(encoding="utf-8")
    result = runner.invoke(app, ["reproduce", str(catalog / OURS_8B), str(mine), "--by", "A. Tester", "--note",
                                 "second machine", "--write"])
    assert result.exit_code == 0, result.output
    after = (catalog / OURS_8B).read_text(encoding="utf-8")
    assert after.startswith(before.rstrip("\n")) and "by: A. Tester" in after
    entries = load_recipe(catalog / OURS_8B).reproductions
    assert [e.by for e in entries][-1] == "A. Tester" and entries[-1].log == "runs/reproductions/mine/train.log"
    assert all(r.ok for r in audit(catalog))


def test_reproduce_write_of_a_log_outside_the_catalog_is_refused(catalog, tmp_path):
    outside = tmp_path.parent / f"{tmp_path.name}-outside.log"
    shutil.copy(catalog / RERUN / "ours/train.log", outside)
    before = (catalog / OURS_8B).read_text(encoding="utf-8")
    result = cli("reproduce", catalog / OURS_8B, outside, "--write")
    assert result.returncode == 2 and "copy it under runs/" in result.stderr
    assert result.stderr.count("\n") == 1 and (catalog / OURS_8B).read_text(encoding="utf-8") == before


@pytest.mark.parametrize("args, message", [
    (("reproduce", OURS_8B, "runs/nope/train.log"), "cannot read"),
    (("audit", "recipes/nope.yaml"), "no such file or folder"),
    (("audit", "--catalog", "/nonexistent-catalog"), "no recipes/ folder"),
    (("record", "runs/nope", "--like", OURS_8B, "--name", "x"), "no train.log"),
])
def test_bad_input_is_one_line_and_exit_2(args, message):
    result = cli(*args)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.startswith("error: ") and message in result.stderr and result.stderr.count("\n") == 1


def test_a_truncated_reproduction_log_is_bad_input(catalog):
    log = catalog / "runs/reproductions/cut/train.log"
    log.parent.mkdir(parents=True)
    lines = (catalog / RERUN / "ours/train.log").read_text(encoding="utf-8").splitlines()
    cut = [line for line in lines if "step: 12 " not in line and "step: 13 " not in line]
    log.write_text("\n".join(cut) + "\n", encoding="utf-8")
    result = cli("reproduce", catalog / OURS_8B, log)
    assert result.returncode == 2 and "missing" in result.stderr


def test_record_writes_a_recipe_that_validates_and_audits_re_derived(catalog):
    run = catalog / "runs/my-reshard-run"
    shutil.copytree(catalog / RERUN / "stock", run)
    stock = load_recipe(catalog / STOCK_8B)
    (run / "command.sh").write_text(stock.run.rstrip("\n")
                                    + " \\\n    --parallelism.fsdp_reshard_after_forward never\n")
    result = runner.invoke(app, ["record", str(run), "--like", str(catalog / STOCK_8B), "--name", "stock-noreshard"])
    assert result.exit_code == 0, result.output
    path = catalog / "recipes/qwen3-8b/h200/stock-noreshard.yaml"
    recorded = load_recipe(path)
    assert recorded.result.tokens_per_s_per_gpu == 8535.04 and recorded.runs.candidate == "runs/my-reshard-run"
    assert recorded.correctness.configuration == "pass" and recorded.correctness.convergence.result == "pass"
    assert recorded.stack.nccl == "2.28.9" and recorded.runs.candidate_sha256
    assert {r.path.as_posix(): r.evidence for r in audit(catalog)}["recipes/qwen3-8b/h200/stock-noreshard.yaml"] \
        == "re-derived"


def test_record_refuses_a_second_entry_of_one_configuration(catalog):
    run = catalog / "runs/my-rerun"
    shutil.copytree(catalog / RERUN / "ours", run)
    result = cli("record", run, "--like", catalog / OURS_8B, "--name", "ours-again")
    assert result.returncode == 2 and "one configuration" in result.stderr
    assert not (catalog / "recipes/qwen3-8b/h200/ours-again.yaml").exists()
    assert not list((catalog / "recipes/qwen3-8b/h200").glob(".*.tmp"))
