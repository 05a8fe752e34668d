"""The site build at catalog scale: a synthetic catalog of 10,000 recipes (written by benchmarks/site_build.py's
generator, timed here too) built by the site code before this round of changes (BASELINE_COMMIT, checked out of git
into a temporary folder) and by this checkout, each arm in its own Python process, the arms taking turns on one
catalog so a change in the machine's load hits both. Each arm reports its load-and-validate time, its build time,
wall and CPU seconds (with the processes a build forks), and the largest board page and the index, against the
targets (load and build in 30 s, no board page over 300 KB, an index under 500 KB).

    .venv/bin/python benchmarks/site_scale.py [--recipes 10000] [--runs 1] [--tiny]   # prints a Markdown section
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
BASELINE_COMMIT = "b393138"  # main before pages, plots and audits were built on every core
TARGET_BUILD_S = 30.0
BOARD_BUDGET = 300 * 1024
INDEX_BUDGET = 500 * 1024
# What one arm runs: load and validate the catalog, build the site, report its timings and page sizes as JSON.
# CPU seconds count this process and the processes it forked (a build may use every core).
ARM = """
import json, os, sys, time
from pathlib import Path
from openrecipes.catalog.store import load_catalog
from openrecipes.site.build import build_site
def cpu():
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system
start, start_cpu = time.perf_counter(), cpu()
catalog = load_catalog(Path(sys.argv[1]))
loaded, loaded_cpu = time.perf_counter(), cpu()
report = build_site(catalog, Path(sys.argv[2]))
built, built_cpu = time.perf_counter(), cpu()
boards = {p: n for p, n in report.pages.items() if p.startswith("models/") and "/rows" in p and "running" not in p}
largest = max(boards.items(), key=lambda item: item[1])
print(json.dumps({"load_s": loaded - start, "build_s": built - loaded, "load_cpu": loaded_cpu - start_cpu,
                  "build_cpu": built_cpu - loaded_cpu, "board": largest,
                  "index": report.pages["index.html"], "largest": max(report.pages.items(), key=lambda item: item[1]),
                  "pages": len(report.pages)}))
"""


def baseline_tree(folder: Path, commit: str = BASELINE_COMMIT) -> Path:
    """A commit's package and the bundled tables it reads (models/, hardware/, rules/, schema/)."""
    folder.mkdir(parents=True)
    # derived/ holds the held-out tables the site reads, once they left src/ (commits before that have none)
    has_derived = subprocess.run(["git", "cat-file", "-e", f"{commit}:derived"], cwd=REPO, capture_output=True)
    archive = subprocess.run(["git", "archive", commit, "src", "models", "hardware", "rules", "schema",
                              *(["derived"] if has_derived.returncode == 0 else [])],
                             cwd=REPO, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder / "src"


def catalog_as_known_to(tree: Path, catalog: Path, copy: Path) -> Path:
    """The catalog as the baseline's schema (tree/schema/) can read it: a recipe's top-level fields added since
    (`engine:`) dropped, every other line and file as written, so both arms load the same recipes."""
    schema = yaml.safe_load((tree / "schema" / "recipe.schema.yaml").read_text(encoding="utf-8"))
    known = {field for kind in schema["anyOf"] for field in schema["$defs"][kind["$ref"].split("/")[-1]]["properties"]}
    shutil.copytree(catalog, copy)
    for path in (copy / "recipes").rglob("*.yaml"):
        kept, dropping = [], False
        for line in path.read_text(encoding="utf-8").splitlines(keepends=True):
            if line[:1] not in (" ", "\n", "#", "-"):  # a top-level field starts here
                dropping = line.split(":", 1)[0] not in known
            if not dropping:
                kept.append(line)
        path.write_text("".join(kept), encoding="utf-8")
    return copy


def run_arm(source: Path, catalog: Path, out: Path) -> dict:
    environment = {**os.environ, "PYTHONPATH": str(source)}
    done = subprocess.run([sys.executable, "-c", ARM, str(catalog), str(out)], env=environment, capture_output=True,
                          text=True, check=False, cwd=catalog)
    if done.returncode:
        raise SystemExit(f"{source}: the arm failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def run_arms(work: Path, runs: int, baseline: str = BASELINE_COMMIT) -> dict[str, list[dict]]:
    """Each arm built `runs` times from work/catalog, the arms taking turns: {"before": [report, ...], "now": ...}."""
    before = baseline_tree(work / "before", baseline)
    arms = {"before": (before, catalog_as_known_to(before.parent, work / "catalog", work / "catalog-before")),
            "now": (REPO / "src", work / "catalog")}
    results: dict[str, list[dict]] = {arm: [] for arm in arms}
    for run in range(runs):
        for arm, (source, catalog) in arms.items():
            results[arm].append(run_arm(source, catalog, work / f"site-{arm}-{run}"))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipes", type=int, default=10000)
    parser.add_argument("--runs", type=int, default=1, help="builds of each arm, taken alternately")
    parser.add_argument("--tiny", action="store_true", help="5 recipes, a build per arm (a check that it runs)")
    arguments = parser.parse_args()
    if arguments.tiny:
        arguments.recipes, arguments.runs = 5, 1
    sys.path.insert(0, str(REPO / "benchmarks"))
    from site_build import write_synthetic_catalog

    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        start = time.perf_counter()
        write_synthetic_catalog(work / "catalog", arguments.recipes)
        generate_s = time.perf_counter() - start
        results = run_arms(work, arguments.runs)
    load_after = os.getloadavg()
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())

    def median(arm: str, key: str) -> float:
        return statistics.median(r[key] for r in results[arm])

    def spread(arm: str, key: str) -> str:
        values = [r[key] for r in results[arm]]
        return f"{min(values):.1f}–{max(values):.1f}"

    lines = [f"| {label} | {median('before', key):.1f} s ({spread('before', key)}) | {median('now', key):.1f} s "
             f"({spread('now', key)}) | {median('before', key) / median('now', key):.2f}x |"
             for label, key in (("load + validate, wall", "load_s"), ("build, wall", "build_s"),
                                ("load + validate, CPU", "load_cpu"), ("build, CPU", "build_cpu"))]
    now = results["now"][-1]
    before = results["before"][-1]
    total = median("now", "load_s") + median("now", "build_s")
    verdict = ("meets" if total <= TARGET_BUILD_S and now["board"][1] <= BOARD_BUDGET
               and now["index"] < INDEX_BUDGET else "MISSES")
    print(f"""
## Site build at {arguments.recipes:,} recipes — {datetime.date.today()}
(benchmarks/site_scale.py --runs {arguments.runs})

Machine: {os.cpu_count()} CPUs (`nproc`), {cpu}, Python {platform.python_version()}; shared with other work while
it ran: load average (1, 5, 15 min) {", ".join(f"{x:.2f}" for x in load_before)} before,
{", ".join(f"{x:.2f}" for x in load_after)} after. Generator (benchmarks/site_build.py's, {arguments.recipes:,}
YAML recipes, each seed's YAML written once through the typed model): {generate_s:.1f} s. Each arm in its own
process, {arguments.runs} run(s) each, alternating; "before" is the site code of commit {BASELINE_COMMIT}, "now"
this checkout.

| step | before | now | before / now |
|---|---:|---:|---:|
{chr(10).join(lines)}

Pages: {now['pages']:,}. Largest board page: before {before['board'][1] / 1024:,.0f} KB,
now {now['board'][1] / 1024:,.0f} KB (budget 300 KB); index: before {before['index'] / 1024:,.0f} KB,
now {now['index'] / 1024:,.0f} KB (budget 500 KB). Largest page of any kind: before {before['largest'][0]}
{before['largest'][1] / 1024:,.0f} KB, now {now['largest'][0]} {now['largest'][1] / 1024:,.0f} KB.
Now {verdict} the targets (load + build ≤ {TARGET_BUILD_S:.0f} s wall: {total:.1f} s; board ≤ 300 KB, index < 500 KB).
""")


if __name__ == "__main__":
    main()
