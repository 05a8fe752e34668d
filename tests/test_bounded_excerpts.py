"""A stored excerpt with oversized numbers or deeply nested JSON is one error naming its file and line: the
importers exit 2 with one line and write nothing, `audit` reports a finding (exit 1); never a traceback."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, openrecipes

MLPERF = "data/record-sources/mlperf-training"
RESULT = f"{MLPERF}/v5.1/Dell/results/1xXE9780x8B300-SXM-270GB/llama31_8b/result_0.txt.txt"
SYSTEM = f"{MLPERF}/v5.1/Dell/systems/1xXE9780x8B300-SXM-270GB.json.txt"
DGXC = "data/record-sources/dgxc-benchmarking"
DGXC_8B = f"{DGXC}/v24.11.1/llama3.1/README_8b.md.txt"
HUGE, FORTY = "9" * 5000, "9" * 4000  # past Python's 4,300-digit limit on int(), and just within it

DEEP = ":::MLLOG " + '{"a": ' * 100_000 + "1" + "}" * 100_000
MLLOG_DAMAGE = {  # label -> (text replaced, its replacement) in the first "time_ms" line kept
    "nested-100000-deep": (None, DEEP),
    "5000-digit-time": ('"time_ms": 1', f'"time_ms": {HUGE}1'),
    "4000-digit-time": ('"time_ms": 1', f'"time_ms": {FORTY}1'),
}
DGXC_DAMAGE = {  # label -> (text replaced, its replacement) in the 8B excerpt of v24.11.1
    "gpus-5000-digits": ("Throughput on 8x H100", f"Throughput on {HUGE}x H100"),
    "gbs-5000-digits": ("(GBS=128)", f"(GBS={HUGE})"),
    "tp-5000-digits": ("(TP=1,", f"(TP={HUGE},"),
    "step-time-5000-digits": ("| 12.91 ", f"| {HUGE}.5 "),
    "line-number-5000-digits": ("\n54: ", f"\n{HUGE}: "),
}


def _copy(root: Path, source: str, folders: tuple[str, ...]) -> Path:
    for folder in ("models", "hardware", *folders):
        shutil.copytree(REPO / folder, root / folder)
    for path in (REPO / "recipes").rglob(f"record-{source}-*.yaml"):
        (root / path.relative_to(REPO)).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, root / path.relative_to(REPO))
    return root


def _damage(path: Path, old: str | None, new: str) -> int:
    """The first kept line holding `old` (every line: None) with it replaced by `new`; its line in the file."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    i = next(i for i, line in enumerate(lines) if ": " in line and not line.startswith("#")
             and (old is None and "time_ms" in line or old is not None and old in line))
    number, _, rest = lines[i].partition(": ")
    lines[i] = f"{number}: {new}\n" if old is None else lines[i].replace(old, new, 1)
    path.write_text("".join(lines), encoding="utf-8")
    return i + 1


def _importer(script: str, root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "scripts" / script), "--root", str(root)], capture_output=True,
                          text=True, check=False, env={"PYTHONPATH": os.environ.get("PYTHONPATH", str(REPO / "src"))})


def _one_line(result: subprocess.CompletedProcess) -> str:
    lines = result.stderr.splitlines()
    assert result.returncode == 2 and len(lines) == 1 and "Traceback" not in result.stderr, result.stderr[-2000:]
    return lines[0]


@pytest.mark.parametrize("label", MLLOG_DAMAGE)
def test_a_damaged_mllog_line_is_one_error_for_the_importer_and_a_finding_for_audit(tmp_path, label):
    root = _copy(tmp_path / "catalog", "mlperf", (MLPERF,))
    before = {p: p.read_bytes() for p in (root / "recipes").rglob("*.yaml")}
    _damage(root / RESULT, *MLLOG_DAMAGE[label])
    line = _one_line(_importer("import_mlperf_training.py", root))
    assert line.startswith(f"error: {RESULT}:") and "re-store it" in line, line
    assert {p: p.read_bytes() for p in (root / "recipes").rglob("*.yaml")} == before
    entry = next((root / "recipes").rglob("record-mlperf-*.yaml"))
    audit = openrecipes("audit", entry, "--catalog", root)
    assert audit.returncode == 1 and "Traceback" not in audit.stdout + audit.stderr
    assert f"{RESULT}:" in audit.stdout


def test_a_system_description_with_a_5000_digit_node_count_is_one_error(tmp_path):
    root = _copy(tmp_path / "catalog", "mlperf", (MLPERF,))
    _damage(root / SYSTEM, '"number_of_nodes": "1"', f'"number_of_nodes": "{HUGE}"')
    line = _one_line(_importer("import_mlperf_training.py", root))
    assert "number_of_nodes" in line and "from 1 to 1,048,576" in line, line


@pytest.mark.parametrize("label", DGXC_DAMAGE)
def test_an_oversized_number_in_a_dgxc_excerpt_is_one_error_naming_file_and_line(tmp_path, label):
    root = _copy(tmp_path / "catalog", "dgxc", (DGXC,))
    before = {p: p.read_bytes() for p in (root / "recipes").rglob("*.yaml")}
    old, new = DGXC_DAMAGE[label]
    path = root / DGXC_8B
    path.write_text(path.read_text(encoding="utf-8").replace(old, new, 1), encoding="utf-8")
    line = _one_line(_importer("import_dgxc_benchmarking.py", root))
    assert line.startswith(f"error: {DGXC_8B}:") and len(line) < 600, line
    assert {p: p.read_bytes() for p in (root / "recipes").rglob("*.yaml")} == before
