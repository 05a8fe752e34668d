"""What the public record's pages cost a build of the bundled site: the site code of a git revision without them
(`--before`, exported whole with `git archive`: the package finds its rules beside src/) against this checkout, on
the same catalog, alternately.

Each arm runs in a child interpreter (two versions of one package cannot share a process), which times
`load_catalog` and `build_site` apart; the arms alternate so that a busy machine slows both alike.

    .venv/bin/python benchmarks/site_record.py [--before 84a9370] [--runs 3] [--tiny]   # prints a Markdown section

The default baseline's code cannot read today's catalog (its tables have gained fields since): pass `--before` a
revision that can. `--tiny` (one run per arm, this checkout's committed code as the baseline) checks that the
benchmark runs; its figures mean nothing.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CHILD = """
import json, sys, time
from pathlib import Path
from openrecipes.catalog.store import load_catalog
from openrecipes.site.build import build_site
start = time.perf_counter()
catalog = load_catalog(Path(sys.argv[1]))
loaded = time.perf_counter()
report = build_site(catalog, Path(sys.argv[2]))
print(json.dumps({"load": loaded - start, "build": time.perf_counter() - loaded, "pages": len(report.pages)}))
"""


def _arm(src: Path, out: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(src)}
    done = subprocess.run([sys.executable, "-c", CHILD, str(REPO), str(out)], env=env, capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"the build with {src} failed: {done.stderr.strip().splitlines()[-1]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    # 84a9370: the `record` branch where it was merged, the site code before the public record's pages
    parser.add_argument("--before", default="84a9370", help="git revision whose site code is the baseline")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--tiny", action="store_true", help="one run per arm, --before HEAD (a check that it runs)")
    args = parser.parse_args()
    if args.tiny:
        args.before, args.runs = "HEAD", 1
    with tempfile.TemporaryDirectory() as temp:
        before = Path(temp) / "before"
        before.mkdir()
        archive = subprocess.run(["git", "-C", str(REPO), "archive", args.before], check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(before)], input=archive, check=True)
        arms = {f"before ({args.before})": before / "src", "after (this checkout)": REPO / "src"}
        times: dict[str, list[dict]] = {name: [] for name in arms}
        for run in range(args.runs):
            for name, src in arms.items():
                times[name].append(_arm(src, Path(temp) / f"site-{run}-{len(times[name])}-{name.split()[0]}"))
    print(f"## Public record pages in the site build — {datetime.date.today()} (benchmarks/site_record.py "
          f"--runs {args.runs})\n")
    print(f"{platform.node()}, {os.cpu_count()} CPUs, Python {platform.python_version()}; bundled catalog; arms "
          "alternate, each a fresh interpreter.\n")
    print("| arm | pages | load (median) | build (median) | build runs |")
    print("|---|---|---|---|---|")
    for name, results in times.items():
        builds = [r["build"] for r in results]
        print(f"| {name} | {results[0]['pages']} | {statistics.median(r['load'] for r in results):.2f} s | "
              f"{statistics.median(builds):.2f} s | {', '.join(f'{b:.2f}' for b in builds)} |")


if __name__ == "__main__":
    main()
