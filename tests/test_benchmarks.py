"""Every benchmark still runs: each script in benchmarks/, in its tiny mode (`--tiny`: the smallest inputs that take
every path it times), exits 0 in a fresh process and prints its result lines; each device script at least parses.
A new script fails here until it has a tiny mode and its result lines are listed below."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import openrecipes

REPO = Path(__file__).resolve().parents[1]
BENCHMARKS = REPO / "benchmarks"
# The package this session imports (this checkout's src/, or another's through PYTHONPATH) is the one benchmarked.
SOURCE = Path(openrecipes.__file__).resolve().parents[1]

# What each script prints when it ran to the end: the lines that carry its ratio or verdict.
RESULT_LINES: dict[str, tuple[str, ...]] = {
    "audit.py": (r"\| synthetic \(5 recipes\) \| 5 \| [\d.]+ s \| [\d.]+ s \| [\d.]+x \|",),
    "figures_guard.py": (r"\d+ files differ, 0 by more than the new figure",),
    "log_memory.py": (r"steps only: .* 100 steps -> peak RSS \d+ MiB",
                      r"0\.001 GiB: .* 100 steps -> peak RSS \d+ MiB"),
    "plan_json.py": (r"Writing: \*\*[\d.]+x\*\* faster",),
    "plan_loo.py": (r"All terms: median \|error\| [\d.]+%", r"- without the torch\.compile gain: median",
                    r"GLM-5\.2 on 64 x B200: [\d,]+ fitting layouts", r"median of the held-out errors"),
    "plan_score.py": (r"\| leave one source out \| \d+ \| [\d.]+% \|",),
    "plan_scale.py": (r"\| gpt-oss-20b, 8 x B200, megatron \| [\d,]+ \| .* \| \*\*[\d.]+x\*\* \|",
                      r"\| megatron \| 8 \| [\d,]+ \| [\d.]+ s \|"),
    "plan_speed.py": (r"\| `plan_table`: .* \*\*[\d.]+x\*\* \|", r"\| `openrecipes plan .* \*\*[\d.]+x\*\* \|"),
    "record_heldout.py": (r"\| MLPerf Training \| 1-8 \|",),
    "refresh_one_recipe.py": (r"\| after \(HEAD\) \| fitted_on .* \| \*\*[\d.]+ s\*\* wall",
                              r"says: 1 entry added since"),
    "rows_build.py": (r"builder vs naive: [\d.]+x wall", r"builder vs previous: [\d.]+x wall",
                      r"identical rows: True", r"identical rows and parquet: True",
                      r"seeds' size, long conversations: 4 rows"),
    "rows_refusal.py": (r"Refused \d+x sooner, with the same message",),
    "site_build.py": (r"\| synthetic \(5 recipes, Pareto plots\) \| .* \| [\d.]+x \|", r"(meets|MISSES) both targets"),
    "site_record.py": (r"\| before \(HEAD\) \| \d+ \|", r"\| after \(this checkout\) \| \d+ \|"),
    "site_record_scale.py": (r"\| now \| [\d.]+ s", r"Now (meets|MISSES) the target"),
    "site_scale.py": (r"\| build, wall \| .* \| [\d.]+x \|", r"Now (meets|MISSES) the targets"),
    "tune_vs_sweep.py": (r"Sweep space: 19 arms", r"\*\*100\.0%\*\* of the sweep's best"),
}
# Seconds or more on 2 cores (sites built, the planner refitted, a baseline read from git): the quick loop runs the
# rest, about 15 s in all.
SLOW = {"plan_loo.py", "plan_scale.py", "plan_speed.py", "refresh_one_recipe.py", "rows_build.py", "site_build.py",
        "site_record.py", "site_record_scale.py", "site_scale.py"}


def _scripts(pattern: str) -> list:
    return [pytest.param(path.name, id=path.name, marks=[pytest.mark.slow] if path.name in SLOW else [])
            for path in sorted(BENCHMARKS.glob(pattern))]


@pytest.mark.parametrize("name", _scripts("*.py"))
def test_benchmark_runs_in_its_tiny_mode(name):
    assert name in RESULT_LINES, f"benchmarks/{name}: give it a --tiny mode and list its result lines here"
    done = subprocess.run([sys.executable, str(BENCHMARKS / name), "--tiny"], cwd=REPO, capture_output=True,
                          text=True, timeout=600, env={**os.environ, "PYTHONPATH": str(SOURCE)})
    assert done.returncode == 0, f"benchmarks/{name} --tiny failed:\n{done.stderr[-3000:]}"
    missing = [line for line in RESULT_LINES[name] if not re.search(line, done.stdout)]
    assert not missing, f"benchmarks/{name} --tiny printed no line like {missing}:\n{done.stdout[-3000:]}"


def test_every_listed_benchmark_exists():
    """No stale entry: a script renamed or removed leaves its lines here only as a failure."""
    assert SLOW <= set(RESULT_LINES) <= {path.name for path in BENCHMARKS.glob("*.py")}


@pytest.mark.parametrize("name", _scripts("*.sh"))
def test_device_script_parses(name):
    """The device scripts need GPUs, wheels and Slurm: here, bash reads them without running anything."""
    done = subprocess.run(["bash", "-n", str(BENCHMARKS / name)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
