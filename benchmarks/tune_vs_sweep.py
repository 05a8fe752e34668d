"""`openrecipes tune` against an exhaustive sweep of the same space, and the planner against every swept layout.

The space is tune's own: the base recipe's configuration (its reference arm) plus every candidate `tune --dry-run`
lists (the planner's fitting, renderable torchtitan layouts with their compile/reshard variants). Every arm is one
short run through the same path tune uses (openrecipes.tune.measuring: torchrun, then openrecipes.measure over
steps 2..9 of 10), so the sweep's figures and tune's are measured alike; device minutes are each run's wall time.

    # on the GPU machine, one process per GPU (each takes the next unclaimed arm, so lanes share the list):
    CUDA_VISIBLE_DEVICES=1 python3 benchmarks/tune_vs_sweep.py sweep qwen3-1.7b --gpu H200 --gpus 1 \\
        --out runs/sweep-qwen3-1.7b-h200x1 --until $(( $(date +%s) + 540 ))
    python3 benchmarks/tune_vs_sweep.py clean runs/sweep-qwen3-1.7b-h200x1   # before resuming: drop cut-off arms
    # here: the Markdown section for RESULTS.md
    .venv/bin/python benchmarks/tune_vs_sweep.py report --tune runs/tune-... --sweep runs/sweep-...
    # a check that the benchmark runs, on a CPU: the sweep's space listed (not run), and the stored tune's report
    .venv/bin/python benchmarks/tune_vs_sweep.py --tiny
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from openrecipes.atomic import write_atomic
from openrecipes.plan.accuracy import allocator_gib, spearman
from openrecipes.plan.constants import calibration
from openrecipes.tune.arms import arm_of, reference_arm
from openrecipes.tune.candidates import MEASURE_STEPS, estimated_minutes, rank
from openrecipes.tune.measuring import measure_candidate, record
from openrecipes.tune.search import setup

# The targets: tune's winner within 97% of the sweep's best, on at most 30% of its device time; the
# planner's peak memory within 10% and Spearman >= 0.8.
WINNER_SHARE, TIME_SHARE, MEMORY_TOLERANCE, SPEARMAN_TARGET = 0.97, 0.30, 0.10, 0.8
# tune's minutes estimate is optimistic for eager layouts (the planner over-predicts eager Qwen3-1.7B speed by half):
# an arm starts only if 1.5 times its estimate ends before --until.
ESTIMATE_MARGIN = 1.5
# What tune did with a layout it did not measure, by the start of its reason.
NOT_MEASURED = {"its optimistic": "not a contender at the start", "cannot win": "dropped after a measurement",
                "budget": "over budget", "out of memory": "OOM", "the run failed": "failed"}
REPO = Path(__file__).resolve().parents[1]
# --tiny's inputs: the stored H200 tune and its sweep, the ones benchmarks/RESULTS.md reports.
TINY_TUNE, TINY_SWEEP = REPO / "runs/tune-qwen3-1.7b-h200x1-20261130-032357", REPO / "runs/sweep-qwen3-1.7b-h200x1"


def sweep_arms(model: str, gpu: str, gpus: int):
    """(name, arm) of the whole space in the planner's order at its prior: the reference arm first."""
    s = setup(model, gpu, gpus)
    ranked = rank(s.ranked, s.prior)
    arms = [("reference", reference_arm(s.base, s.card, s.reference, MEASURE_STEPS))]
    arms += [(c.slug, arm_of(c.slug, s.base, s.card, c, MEASURE_STEPS)) for c in ranked]
    return s, arms


def _claim(out: Path, name: str) -> bool:
    try:
        fd = os.open(out / f"{name}.claim", os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return False
    os.write(fd, f"{os.environ.get('CUDA_VISIBLE_DEVICES', '')}\n".encode())
    os.close(fd)
    return True


def sweep(model: str, gpu: str, gpus: int, out: Path, until: float, only: list[str] | None = None,
          margin: float = ESTIMATE_MARGIN) -> None:
    s, arms = sweep_arms(model, gpu, gpus)
    if only:
        unknown = set(only) - {arm.candidate.slug for _, arm in arms}
        if unknown:
            raise SystemExit(f"--only: not in the space: {', '.join(sorted(unknown))} "
                             "(see `openrecipes tune --dry-run`)")
        arms = sorted((a for a in arms if a[1].candidate.slug in only), key=lambda a: only.index(a[1].candidate.slug))
    out.mkdir(parents=True, exist_ok=True)
    for name, arm in arms:
        c = arm.candidate
        minutes = estimated_minutes(c, s.prior)
        if time.time() + margin * minutes * 60 > until:
            print(f"stop: {name} needs about {minutes:.1f} minutes, past --until", flush=True)
            continue
        if (out / f"{name}.json").exists() or not _claim(out, name):
            continue
        print(f"sweep: {name}", flush=True)
        m = measure_candidate(arm.recipe, MEASURE_STEPS, out / name, tables=s.tables)
        row = record(c, m, s.root, name=name)
        write_atomic(out / f"{name}.json", json.dumps(row, indent=1) + "\n")
        print(f"  {m.tokens_per_s_per_gpu or 0:,.0f} tokens/s/GPU, peak {m.peak_memory_gib} GiB, "
              f"{m.minutes:.2f} min, oom={m.oom} {m.error or ''}", flush=True)


def clean(out: Path) -> None:
    """Drop the arms a cut-off lane claimed but never recorded, so a later lane runs them again."""
    for claim in out.glob("*.claim"):
        name = claim.name[:-len(".claim")]
        if not (out / f"{name}.json").exists():
            shutil.rmtree(out / name, ignore_errors=True)
            claim.unlink()
            print(f"cleaned {name}")


def _rows(out: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(out.glob("*.json"))]


def _planner(model: str, gpu: str, gpus: int) -> dict[str, tuple[float, float]]:
    """slug -> (tokens/s per GPU, allocator GiB) the planner predicts now, at its calibration (no tune refit)."""
    s = setup(model, gpu, gpus)
    reserve = calibration().runtime_reserve_gib
    return {c.slug: (c.tokens_per_s_per_gpu(s.prior.of(c.layout)), allocator_gib(c.memory_gib, reserve))
            for c in [s.reference, *s.ranked]}


@dataclass
class Comparison:
    tuned: dict  # tune.json
    rows: list[dict]  # the sweep's arms with the planner's predictions now
    best: dict  # the sweep's fastest arm
    winner: dict  # tune's winner as tune measured it
    winner_in_sweep: dict  # the same layout as the sweep measured it
    tune_minutes: float
    tune_runs: int
    sweep_minutes: float

    @property
    def ran(self) -> list[dict]:
        return [r for r in self.rows if r.get("tokens_per_s_per_gpu")]

    @property
    def winner_share(self) -> float:
        """The winner's layout against the sweep's best, both measured by the sweep (same conditions)."""
        return self.winner_in_sweep["tokens_per_s_per_gpu"] / self.best["tokens_per_s_per_gpu"]

    @property
    def time_share(self) -> float:
        return self.tune_minutes / self.sweep_minutes

    @property
    def spearman(self) -> float:
        return spearman([r["predicted_tokens_per_s_per_gpu"] for r in self.ran],
                        [r["tokens_per_s_per_gpu"] for r in self.ran])

    def memory_errors(self) -> list[float]:
        return [r["predicted_allocator_gib"] / r["peak_memory_gib"] - 1 for r in self.ran if r.get("peak_memory_gib")]


def compare(tune_dir: Path, sweep_dir: Path) -> Comparison:
    tuned = json.loads((tune_dir / "tune.json").read_text())
    planner = _planner(tuned["model"], tuned["gpu"], tuned["gpus"])
    rows = [{**row, "predicted_tokens_per_s_per_gpu": planner[row["slug"]][0],
             "predicted_allocator_gib": planner[row["slug"]][1]} for row in _rows(sweep_dir)]
    tune_arms = [tuned["reference"], *[o for o in tuned["outcomes"] if "minutes" in o]]
    winner = next(a for a in tune_arms if a["slug"] == tuned["winner"])
    best = max((r for r in rows if r.get("tokens_per_s_per_gpu")), key=lambda r: r["tokens_per_s_per_gpu"])
    return Comparison(tuned, rows, best, winner, next(r for r in rows if r["slug"] == winner["slug"]),
                      sum(a["minutes"] for a in tune_arms), len(tune_arms), sum(r["minutes"] for r in rows))


def report(tune_dir: Path, sweep_dir: Path) -> str:
    c = compare(tune_dir, sweep_dir)
    tuned = c.tuned
    lines = [
        f"Space: {tuned['model']} on {tuned['gpus']} x {tuned['gpu']}, base `{tuned['base']}`: the reference arm "
        f"and {tuned['candidates']} candidates; {len(c.rows)} swept, {len(c.ran)} ran to the end.", "",
        "| layout | planner tok/s/GPU | measured | planner GiB (allocator) | measured GiB | error | minutes | tune |",
        "|---|---:|---:|---:|---:|---:|---:|---|"]
    tune_outcomes = {o["slug"]: o for o in tuned["outcomes"]}
    for r in sorted(c.rows, key=lambda r: -(r.get("tokens_per_s_per_gpu") or 0)):
        tps, peak = r.get("tokens_per_s_per_gpu"), r.get("peak_memory_gib")
        error = f"{r['predicted_allocator_gib'] / peak - 1:+.1%}" if peak else "-"
        outcome = tune_outcomes.get(r["slug"], tuned["reference"])
        reason = outcome.get("dropped") or ""
        in_tune = "measured" if "minutes" in outcome else next(
            (short for start, short in NOT_MEASURED.items() if reason.startswith(start)), reason)
        label = "reference: " + r["label"] if r["name"] == "reference" else r["label"]
        lines.append(f"| {label}{' **best**' if r is c.best else ''} | {r['predicted_tokens_per_s_per_gpu']:,.0f} | "
                     f"{f'{tps:,.0f}' if tps else 'OOM' if r.get('oom') else 'failed'} | "
                     f"{r['predicted_allocator_gib']:.1f} | {f'{peak:.2f}' if peak else '-'} | {error} | "
                     f"{r['minutes']:.2f} | {in_tune} |")
    errors = c.memory_errors()
    lines += ["",
              f"- Sweep best: {c.best['label']}, {c.best['tokens_per_s_per_gpu']:,.0f} tokens/s/GPU.",
              f"- Tune's winner: {c.winner['label']}, {c.winner_in_sweep['tokens_per_s_per_gpu']:,.0f} in the sweep "
              f"({c.winner['tokens_per_s_per_gpu']:,.0f} in tune's own run): **{c.winner_share:.1%}** of the sweep's "
              f"best (target {WINNER_SHARE:.0%}).",
              f"- Device minutes (each run's wall time): tune {c.tune_minutes:.1f} ({c.tune_runs} runs), sweep "
              f"{c.sweep_minutes:.1f} "
              f"({len(c.rows)} runs): **{c.time_share:.1%}** (target ≤ {TIME_SHARE:.0%}). Tune stopped: "
              f"{tuned['stop_reason']}.",
              f"- Planner peak memory within ±{MEMORY_TOLERANCE:.0%}: "
              f"{sum(abs(e) <= MEMORY_TOLERANCE for e in errors)} of {len(errors)} layouts "
              f"({min(errors):+.1%} … {max(errors):+.1%}).",
              f"- Spearman, the planner's tokens/s (its calibration now, no tune refit) vs measured over {len(c.ran)} "
              f"layouts: **{c.spearman:.2f}** (target {SPEARMAN_TARGET})."]
    return "\n".join(lines) + "\n"


def tiny() -> None:
    """Every step a CPU can take: the sweep's arms rendered (a sweep runs them on GPUs), the stored pair reported."""
    _, arms = sweep_arms("qwen3-1.7b", "H200", 1)
    print(f"Sweep space: {len(arms)} arms ({', '.join(name for name, _ in arms[:3])}, ...), rendered, not run.\n")
    sys.stdout.write(report(TINY_TUNE, TINY_SWEEP))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tiny", action="store_true", help="a check that the benchmark runs, on a CPU")
    sub = parser.add_subparsers(dest="verb")
    run = sub.add_parser("sweep")
    run.add_argument("model")
    run.add_argument("--gpu", required=True)
    run.add_argument("--gpus", type=int, required=True)
    run.add_argument("--out", type=Path, required=True)
    run.add_argument("--until", type=float, required=True, help="epoch seconds after which no arm is started")
    run.add_argument("--only", help="comma-separated layout slugs to run, in this order (default: the whole space)")
    run.add_argument("--margin", type=float, default=ESTIMATE_MARGIN,
                     help="an arm starts only if this many times its estimated minutes end before --until")
    sub.add_parser("clean").add_argument("out", type=Path)
    rep = sub.add_parser("report")
    rep.add_argument("--tune", type=Path, required=True)
    rep.add_argument("--sweep", type=Path, required=True)
    args = parser.parse_args()
    if args.tiny:
        tiny()
    elif args.verb == "sweep":
        sweep(args.model, args.gpu, args.gpus, args.out, args.until, args.only.split(",") if args.only else None,
              args.margin)
    elif args.verb == "clean":
        clean(args.out)
    elif args.verb == "report":
        sys.stdout.write(report(args.tune, args.sweep))
    else:
        parser.error("name a verb (sweep, clean or report) or give --tiny")


if __name__ == "__main__":
    main()
