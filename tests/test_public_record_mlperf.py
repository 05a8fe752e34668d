"""MLPerf Training results imported per submission from stored excerpts of their MLLOG, system description and
config script: tokens/s per GPU derived from the training blocks (median of the runs), the evidence `audited`, a
malformed log line refused with its file and line, and a submission whose layout the scripts do not pin reported."""

from __future__ import annotations

import importlib.util
import json
import shutil

import pytest
from conftest import REPO

from openrecipes.audit.review import audit
from openrecipes.record.importer import run_script

SPEC = importlib.util.spec_from_file_location("import_mlperf_training", REPO / "scripts/import_mlperf_training.py")
MLPERF = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(MLPERF)
BASE = "data/record-sources/mlperf-training/v5.1/AMD"


def _head(path: str) -> str:
    return (f"# origin: mlcommons/training_results_v5.1 {path}\n# commit: {'c' * 40}\n# file sha256: {path}\n"
            "# kept: test\n")


def _mllog(line: int, key: str, value, time_ms: int, **metadata) -> str:
    event = {"namespace": "", "time_ms": time_ms, "event_type": "POINT_IN_TIME", "key": key, "value": value,
             "metadata": {"file": "x.py", "lineno": 1, **metadata}}
    return f"{line}: :::MLLOG {json.dumps(event)}\n"


def _result(seconds: tuple[float, float, float]) -> str:
    """Three blocks of 12,288 samples each (the first one warm-up), each followed by its evaluation."""
    text = "".join(_mllog(i + 1, key, value, 1000) for i, (key, value) in enumerate([
        ("submission_benchmark", "llama31_8b"), ("submission_org", "AMD"), ("submission_division", "closed"),
        ("submission_platform", "MI355X"), ("global_batch_size", 32), ("max_sequence_length", 8192)]))
    line, now = 10, 10_000
    for block, length in enumerate(seconds, start=1):
        text += _mllog(line, "block_start", None, now, samples_count=12288 * (block - 1))
        now += int(length * 1000)
        text += _mllog(line + 1, "block_stop", None, now, samples_count=12288 * block)
        text += _mllog(line + 2, "eval_accuracy", 3.5, now + 500, samples_count=12288 * block)
        line, now = line + 3, now + 1000
    return text


SYSTEM = ('5:     "accelerator_model_name": "AMD Instinct MI355X",\n6:     "accelerators_per_node": "8",\n'
          '7:     "number_of_nodes": "1",\n8:     "framework": "PyTorch 2.8.0, ROCm 7.0.0",\n')
CONFIG = "1: export NNODES=1\n2: export GPUS_PER_NODE=8\n3: export GBS=32\n4: export MBS=2\n5: export TP=1\n" \
         "6: export PP=1\n7: export CP=1\n8: export FP8_PARAMS=1\n"


def _catalog(tmp_path, runs=((500.0, 400.0, 402.0), (480.0, 401.0, 401.0)), config=CONFIG):
    root = tmp_path / "catalog"
    (root / "recipes").mkdir(parents=True)
    files = {f"results/MI355X_x/llama31_8b/result_{i}.txt": _result(seconds) for i, seconds in enumerate(runs)}
    files["systems/MI355X_x.json"] = SYSTEM
    files["benchmarks/llama31_8b/implementations/MI355X_x_llama3_8b/config_MI355X_1x8x1_8b.sh"] = config
    for path, body in files.items():
        local = root / BASE / f"{path}.txt"
        local.parent.mkdir(parents=True, exist_ok=True)
        local.write_text(_head(f"AMD/{path}") + body, encoding="utf-8")
    return root


def _run(root, capsys):
    code = run_script(MLPERF.import_mlperf_training, ["--root", str(root)])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_a_submission_is_the_median_of_its_runs_from_the_blocks_after_the_first(tmp_path, capsys):
    root = _catalog(tmp_path)
    code, out, err = _run(root, capsys)
    assert code == 0 and err == "" and "wrote 1 entries" in out
    [path] = (root / "recipes/llama-3.1-8b/mi355x").glob("record-mlperf-v51-fp8-8gpu-dp1-amd-*.yaml")
    text = path.read_text(encoding="utf-8")
    # Runs: 24,576 samples x 8,192 tokens / 802 s and / 802 s over 8 GPUs; the warm-up blocks left out.
    per_run = round(2 * 12288 * 8192 / 802 / 8, 2)
    assert f"tokens_per_s_per_gpu: {per_run}\n" in text
    assert "submitter: AMD\n" in text and "division: closed\n" in text and "variant: MI355X-OAM-288GB\n" in text
    assert "precision_as_published: FP8_PARAMS=1\n" in text and "audited: true\n" in text
    [report] = audit(root)
    assert report.evidence == "audited"


def test_a_malformed_log_line_is_exit_2_naming_the_file_and_line(tmp_path, capsys):
    root = _catalog(tmp_path)
    result = next((root / BASE / "results").rglob("result_0.txt.txt"))
    result.write_text(result.read_text().replace('"key": "block_stop"', '"key": "block_stop"}{', 1), encoding="utf-8")
    code, out, err = _run(root, capsys)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert f"error: {BASE}/results/MI355X_x/llama31_8b/result_0.txt.txt:11: not JSON (Extra data)" in err
    assert not list((root / "recipes").rglob("*.yaml"))


@pytest.mark.parametrize(("config", "why"), [
    (CONFIG.replace("GBS=32", "GBS=64"), "no config script states TP, PP, CP, FP8 or FP4 for 8 GPUs at global batch"),
    (CONFIG.replace("8: export FP8_PARAMS=1\n", ""), "no config script states"),
])
def test_a_submission_whose_scripts_do_not_pin_its_layout_is_reported_not_guessed(tmp_path, capsys, config, why):
    code, out, _ = _run(_catalog(tmp_path, config=config), capsys)
    assert code == 0 and "wrote 0 entries" in out and why in out


def test_a_tampered_run_figure_is_an_audit_finding(tmp_path, capsys):
    root = _catalog(tmp_path)
    assert _run(root, capsys)[0] == 0
    [path] = (root / "recipes").rglob("record-mlperf-*.yaml")
    text = path.read_text(encoding="utf-8")
    first = text.split("run_tokens_per_s_per_gpu:\n    - ")[1].split("\n")[0]
    path.write_text(text.replace(f"    - {first}\n", "    - 1.0\n", 1), encoding="utf-8")
    [report] = audit(root, [path])
    assert report.evidence == "failed" and "published: stored" in report.findings[0].message


def test_the_committed_mlperf_entries_reach_8192_gpus_and_an_amd_gpu(tmp_path):
    root = tmp_path / "catalog"
    for folder in ("recipes", "models", "hardware", "data/record-sources"):
        shutil.copytree(REPO / folder, root / folder)
    reports = [r for r in audit(root) if r.path.name.startswith("record-mlperf-")]
    assert len(reports) >= 20 and all(r.evidence == "audited" for r in reports)
    assert any(r.path.parent.name == "mi355x" for r in reports)
    assert any("-8192gpu-" in r.path.name for r in reports)


def test_a_config_line_the_parser_does_not_know_is_exit_2_naming_it(tmp_path, capsys):
    code, out, err = _run(_catalog(tmp_path, config=CONFIG + "9: if [ -n x ]; then\n"), capsys)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "config_MI355X_1x8x1_8b.sh.txt:9: neither an assignment nor a sourced file" in err
