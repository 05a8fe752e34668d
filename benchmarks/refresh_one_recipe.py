"""`openrecipes refresh` after a contributor adds one recipe, before and after the planner was fitted on a named
snapshot of the catalog (derived/fitted_on.json), and the pull request's diff.

Each arm is a commit of this repository, extracted with `git archive` into a temporary folder (its own code, catalog
and derived data): one recipe is copied there under a new name, as a contributor would add one, `openrecipes
refresh --progress` runs there with that folder's code, and the script prints each step's wall time (from the
progress lines), the whole command's wall and CPU time, and what the refresh changed: the files a pull request
would carry and their changed lines. The arms run one after the other in this process.

    .venv/bin/python benchmarks/refresh_one_recipe.py [--before REF] [--after REF] [--recipe PATH] [--tiny]

`--tiny`: the after arm only, with a Qwen3-0.6B recipe: a check that the benchmark runs.
"""

from __future__ import annotations

import argparse
import io
import os
import re
import resource
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BEFORE = "030eabf"  # the last commit whose planner was fitted on the whole catalog at every refresh
STEP_TIME = re.compile(r"^refresh: \[\d+/\d+\] (\w+): ([\d.]+) s$")


def _extract(ref: str, into: Path) -> None:
    archive = subprocess.run(["git", "archive", ref], cwd=REPO, capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    for command in (["git", "init", "-q"], ["git", "add", "-A"],
                    ["git", "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", ref]):
        subprocess.run(command, cwd=into, check=True)


def _arm(name: str, ref: str, recipe: str) -> None:
    with tempfile.TemporaryDirectory(prefix="refresh-one-") as scratch:
        root = Path(scratch)
        _extract(ref, root)
        source = root / recipe
        shutil.copy(source, source.with_name("contributed-" + source.name))
        env = {**os.environ, "PYTHONPATH": str(root / "src")}
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "openrecipes", "refresh", "--progress"], cwd=root, env=env,
                              capture_output=True, text=True)
        wall = time.monotonic() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode != 0:
            sys.exit(f"{name}: refresh failed: {done.stderr.strip().splitlines()[-1:]}")
        steps = [m.groups() for line in done.stderr.splitlines() if (m := STEP_TIME.match(line))]
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        subprocess.run(["git", "add", "-A"], cwd=root, check=True)
        stat = subprocess.run(["git", "diff", "--cached", "--numstat"], cwd=root, capture_output=True, text=True,
                              check=True).stdout.split("\n")
        changed = [line.split("\t") for line in stat if line]
        lines = sum(int(a) + int(d) for a, d, _ in changed if a != "-")
        print(f"| {name} ({ref}) | " + " · ".join(f"{step} {float(s):.1f} s" for step, s in steps)
              + f" | **{wall:.1f} s** wall, {cpu:.1f} s CPU | {len(changed)} files, {lines:,} lines |")
        for added, deleted, path in changed:
            print(f"  - {path}: +{added} -{deleted}")
        for line in done.stdout.splitlines():
            if "added since" in line:
                print(f"  - says: {line.split('; ', 1)[-1]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default=BEFORE)
    parser.add_argument("--after", default="HEAD")
    parser.add_argument("--recipe", default="recipes/qwen3-8b/h200/openrecipes-fsdp2-compile-noac-mb1.yaml")
    parser.add_argument("--tiny", action="store_true")
    args = parser.parse_args()
    arms = [("after", args.after)] if args.tiny else [("before", args.before), ("after", args.after)]
    recipe = "recipes/qwen3-0.6b/h200/torchtitan-stock.yaml" if args.tiny else args.recipe
    print(f"`refresh` after adding a copy of {recipe}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}\n")
    print("| arm | steps | refresh | the pull request (recipe included) |\n|---|---|---|---|")
    for name, ref in arms:
        _arm(name, ref, recipe)


if __name__ == "__main__":
    main()
