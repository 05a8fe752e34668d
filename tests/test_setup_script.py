"""`scripts/setup.sh test` installs the CPU build of torch: the one the package index gives when it is the CPU build,
else from PyTorch's CPU wheel index, and where neither gives one it says on stderr what it installs before installing
it. Run with a stand-in `python3` whose venv's pip logs each call and answers the dry run with a chosen report, so
no package is installed and nothing is downloaded."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CPU_INDEX = "https://download.pytorch.org/whl/cpu"

# The venv's python: pip's calls are logged; a dry run prints the chosen report; an install from the CPU wheel index
# exits with the chosen code; `python -c` (the script's report reader) runs the real interpreter.
FAKE_PYTHON = """#!/usr/bin/env bash
if [ "$1" = -c ]; then exec {real} "$@"; fi
echo "$*" >> "$SETUP_LOG"
case "$*" in
  *--dry-run*) cat "$SETUP_REPORT" ;;
  *--index-url*) exit "$CPU_INDEX_RC" ;;
esac
exit 0
"""
FAKE_PYTHON3 = """#!/usr/bin/env bash
mkdir -p .venv/bin && cp "$(dirname "$0")/venv-python" .venv/bin/python
"""
NO_OP = "#!/usr/bin/env bash\nexit 0\n"


def _executable(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def _report(torch_version: str, *others: str) -> dict:
    return {"install": [{"metadata": {"name": name, "version": version}}
                        for name, version in (("torch", torch_version), *((o, "1.0") for o in others))]}


def _setup(tmp_path: Path, report: dict, cpu_index_rc: int = 0) -> tuple[subprocess.CompletedProcess, list[str]]:
    repo, bin_dir = tmp_path / "repo", tmp_path / "bin"
    (repo / "scripts").mkdir(parents=True)
    bin_dir.mkdir()
    shutil.copy(REPO / "scripts" / "setup.sh", repo / "scripts" / "setup.sh")
    _executable(bin_dir / "venv-python", FAKE_PYTHON.format(real=sys.executable))
    _executable(bin_dir / "python3", FAKE_PYTHON3)
    for tool in ("apt-get", "sudo"):  # Debian's packages are another test's concern: never installed from here
        _executable(bin_dir / tool, NO_OP)
    (tmp_path / "report.json").write_text(json.dumps(report))
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "SETUP_LOG": str(tmp_path / "log"),
           "SETUP_REPORT": str(tmp_path / "report.json"), "CPU_INDEX_RC": str(cpu_index_rc)}
    done = subprocess.run(["bash", str(repo / "scripts" / "setup.sh"), "test"], env=env, capture_output=True,
                          text=True, timeout=60)
    return done, (tmp_path / "log").read_text().splitlines()


def _torch_installs(log: list[str]) -> list[str]:
    return [line for line in log if "torch==2.13.0" in line and "--dry-run" not in line]


def test_a_cpu_wheel_the_index_gives_is_installed_as_it_is(tmp_path):
    done, log = _setup(tmp_path, _report("2.13.0+cpu", "sympy"))
    assert done.returncode == 0, done.stderr
    assert _torch_installs(log) == ["-m pip install -q torch==2.13.0"]
    assert "installing" not in done.stderr


@pytest.mark.parametrize("report", [_report("2.13.0", "nvidia-cublas", "nvidia-nccl"), _report("2.13.0", "sympy")],
                         ids=["cuda", "no-cpu-label"])
def test_the_cuda_build_is_replaced_by_the_cpu_wheel_index(tmp_path, report):
    cuda = any(item["metadata"]["name"].startswith("nvidia-") for item in report["install"])
    done, log = _setup(tmp_path, report)
    assert done.returncode == 0, done.stderr
    installs = _torch_installs(log)
    if cuda:
        assert len(installs) == 1 and f"--index-url {CPU_INDEX}" in installs[0]
    else:  # a build that pulls no NVIDIA wheel is a CPU build (macOS's, for one)
        assert installs == ["-m pip install -q torch==2.13.0"]


def test_without_a_cpu_build_it_says_what_it_installs_first(tmp_path):
    done, log = _setup(tmp_path, _report("2.13.0", "nvidia-cublas", "nvidia-nccl"), cpu_index_rc=1)
    assert done.returncode == 0, done.stderr
    assert "installing torch 2.13.0, the CUDA build, with 2 NVIDIA wheels (nvidia-cublas, nvidia-nccl)" in done.stderr
    assert CPU_INDEX in done.stderr
    installs = _torch_installs(log)
    assert installs[-1] == "-m pip install -q torch==2.13.0" and CPU_INDEX in installs[0]
