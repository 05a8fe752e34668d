"""The planner scored on data it was not fitted on: leave one source (publisher) out, one part out, one release out.

    PYTHONPATH=src python benchmarks/plan_score.py [--baseline REF] [--releases] [--tiny]

Leave-one-source-out and leave-one-part-out come from derived/heldout.json (`openrecipes refresh`
writes them: each publisher, each hardware variant left out in turn, refitted exactly, its points predicted);
`--releases` also refits without each release of each publisher (about a minute). Each point's printed 90% range is
set by the other publishers' points alone. Prints markdown tables: the headline, then by source, GPU-count band,
engine, precision, dense/MoE and part. `--baseline REF` adds the headline rows of the planner at git commit REF,
scored by that commit's own script on its own heldout.json (its formulas, fit and ranges), for comparison.
`--tiny`: only the headline, from the stored points (a second).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from openrecipes.plan.score import RELEASE, Summary, facets, scorecard  # noqa: E402
from openrecipes.plan.trust import HeldOutPoint, stored_points  # noqa: E402


def row(title: str, points: list[HeldOutPoint]) -> str:
    card = scorecard(points)
    e = card.errors
    return (f"| {title} | {e.points} | {e.median_abs_error:.1%} | {e.within_10:.0%} | {e.within_20:.0%} | "
            f"{card.inside:.0%} | {card.median_width:.0%} |")


HEADER = ("| {} | points | median abs. error | within ±10% | within ±20% | inside the 90% range | median range "
          "width |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: |")


def baseline(ref: str, releases: bool) -> list[str]:
    """The planner as it stood at git commit REF, scored by that commit's own benchmarks/plan_score.py on its own
    derived/heldout.json (its formulas, its fit, its ranges): the headline rows, labelled with REF. The scores are exact
    refits, no timing, so two processes compare as one run."""
    with tempfile.TemporaryDirectory() as folder:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", folder, ref], check=True,
                       capture_output=True)
        try:
            found = subprocess.run([sys.executable, "benchmarks/plan_score.py", "--tiny",
                                    *(["--releases"] if releases else [])], cwd=folder, check=True,
                                   capture_output=True, text=True, env={"PYTHONPATH": f"{folder}/src"}).stdout
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", folder], check=True)
    return [line.replace("| ", f"| {ref}: ", 1) for line in found.splitlines()
            if line.startswith(("| leave one", "| our own"))]

def releases() -> list[str]:
    from openrecipes.plan.calibrate import speed_points
    from openrecipes.plan.constants import calibration
    from openrecipes.plan.score import left_out_predictions, sources

    points, found = speed_points(), sources()
    predicted = left_out_predictions(points, RELEASE, calibration(), found)
    errors = [p_ / p.tokens_per_s_per_gpu - 1 for p_, p in zip(predicted, points, strict=True)]
    ours = [error for error, p in zip(errors, points, strict=True) if found[p.slug].publisher == "OpenRecipes"]
    rows = []
    for title, chosen in (("leave one release out", errors), ("our own runs, leave one measuring call out", ours)):
        e = Summary.of(chosen)
        rows.append(f"| {title} | {e.points} | {e.median_abs_error:.1%} | {e.within_10:.0%} | {e.within_20:.0%} | | |")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", help="a git commit whose planner to score beside")
    parser.add_argument("--releases", action="store_true", help="also leave each release out (refits, a minute)")
    parser.add_argument("--tiny", action="store_true", help="only the headline")
    args = parser.parse_args()
    points = list(stored_points())
    print(HEADER.format("left out"))
    print(row("leave one source out", points))
    part = Summary.of(p.part_error for p in points)
    print(f"| leave one part out | {part.points} | {part.median_abs_error:.1%} | {part.within_10:.0%} | "
          f"{part.within_20:.0%} | | |")
    if args.releases:
        print("\n".join(releases()))
    ours = [p for p in points if p.source == "OpenRecipes"]
    print(row("our own runs, leave one source out", ours))
    if args.baseline:
        print("\n".join(baseline(args.baseline, args.releases)))
    if args.tiny:
        return
    for facet in facets(points[0]):
        groups: dict[str, list[HeldOutPoint]] = {}
        for point in points:
            groups.setdefault(facets(point)[facet], []).append(point)
        print("\n" + HEADER.format(f"leave one source out, by {facet}"))
        for name, members in sorted(groups.items()):
            print(row(name, members))


if __name__ == "__main__":
    main()
