"""Leave-one-out of the planner on every measured point, what each term changes, and the published summaries.

    PYTHONPATH=src python benchmarks/plan_loo.py [--exact] [--tiny]

Prints (Markdown, for benchmarks/RESULTS.md): every point's measured tokens/s, its in-sample and held-out predictions
(every fitted value refitted without it) and the held-out error; the median and rank agreement; the same summary with
each term turned off (its value fixed at "no effect" and left out of the fit); the planner's best fitting layout
against each published summary whose layout is unknown, as "best predicted / published" (not an error); and where
GLM-5.2's measured 64 x B200 layouts rank among the planner's fitting layouts. CPU only, about two minutes.
`--exact` first compares the leave-one-out refits (Gauss-Newton steps from the fit on every point, with its Jacobian)
with exact refits (a full fit without the point) on every ninth point: about a minute more. `--tiny` turns one term
off instead of each and compares one published summary: a check that the benchmark runs, in under a minute.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from openrecipes.catalog.paths import default_catalog_root  # noqa: E402
from openrecipes.catalog.store import load_catalog  # noqa: E402
from openrecipes.plan.calibrate import (  # noqa: E402
    measured_points,
    predict_point,
    request_of,
    speed_points,  # noqa: E402
)
from openrecipes.plan.fit import fit, refits_without_each  # noqa: E402
from openrecipes.plan.heldout import leave_one_out, median_abs_error, predicted_with, rank_agreement  # noqa: E402
from openrecipes.plan.predict import PlanRequest, predict  # noqa: E402

# Each term off: the value at which it has no effect (left out of the fit).
TERMS_OFF = {
    "torch.compile gain": {"compile_speedup": 1.0},
    "CP attention cost": {"cp_attention_efficiency": 1.0},
    "per-microbatch host cost": {"microbatch_overhead_s_per_layer": 1e-12},
    "eager selective-AC host cost": {"eager_sac_overhead_s_per_layer": 1e-12},
    "grouped-GEMM size": {"grouped_gemm_half_rows": 1e-9},
    "torchtitan routed-expert efficiency": {"torchtitan_expert_efficiency": 1.0},
    "Megatron routed-expert efficiency": {"megatron_expert_efficiency": 1.0},
    "fitted EP exposure": {"exposed_communication.ep": 1.0},
}


def _summary(rows) -> str:
    worst = max(rows, key=lambda r: abs(r.error))
    within = sum(abs(r.error) <= 0.15 for r in rows)
    ranks = ", ".join(f"{name} {rho:.2f} ({n})" for name, (n, rho) in rank_agreement(rows).items())
    return (f"median |error| {median_abs_error(rows):.1%}; {within} of {len(rows)} within ±15%; worst "
            f"{worst.error:+.1%} ({worst.name}); Spearman {ranks}")


def compare_with_exact_refits(every: int = 9) -> None:
    points = speed_points()
    full = fit(points)
    linear = refits_without_each(points, full)
    gaps = []
    for i in range(0, len(points), every):
        point = points[i]
        exact = fit([p for p in points if p is not point], start=full)
        gaps.append(abs(predicted_with(point, exact) - predicted_with(point, linear[i])) / point.tokens_per_s_per_gpu)
    print(f"Leave-one-out refits against exact refits on {len(gaps)} of {len(points)} points: held-out errors "
          f"{max(gaps):.2%} apart at most, median {statistics.median(gaps):.3%}\n")


def main() -> None:
    if "--exact" in sys.argv[1:]:
        compare_with_exact_refits()
    tiny = "--tiny" in sys.argv[1:]
    rows = leave_one_out(groups=())
    print("| point | GPUs | layout | measured tok/s/GPU | in-sample | held out | error |")
    print("|---|---|---|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r.name} | {r.gpus} x {r.gpu_type} | {r.layout} | {r.measured:,.1f} | {r.in_sample:,.1f} | "
              f"{r.held_out:,.1f} | {r.error:+.1%} |")
    print(f"\nAll terms: {_summary(rows)}\n")
    for term, fixed in list(TERMS_OFF.items())[:1 if tiny else None]:
        print(f"- without the {term}: {_summary(leave_one_out(fixed=fixed, groups=()))}")

    catalog = load_catalog(default_catalog_root())
    print("\n| published summary | GPUs | published tok/s/GPU | planner's best fitting layout | predicted | "
          "best predicted / published |")
    print("|---|---|---:|---|---:|---:|")
    for entry in list(catalog.summaries)[:1 if tiny else None]:
        summary = entry.entry
        like = next(e.entry for e in catalog.recipes if e.entry.model == summary.model)
        r = request_of(like)
        request = PlanRequest(summary.model, summary.gpu.type, summary.gpu.count, r.row_tokens, r.global_batch,
                              r.engine, r.grad_reduce_bf16)
        best = next(p for p in predict(request) if p.fits)
        lay = best.layout
        print(f"| {summary.model} | {summary.gpu.count} x {summary.gpu.type} | "
              f"{summary.result.tokens_per_s_per_gpu:,.1f} | {lay.label} {lay.recompute}, offload "
              f"{lay.levers.offload_fraction:g}, {lay.max_tokens_per_gpu:,} tokens/GPU | "
              f"{best.tokens_per_s_per_gpu:,.1f} | "
              f"{best.tokens_per_s_per_gpu / summary.result.tokens_per_s_per_gpu:.2f}x |")

    glm = [p for p in measured_points().values() if p.request.model.startswith("GLM") and p.request.gpus == 64]
    ranked = [p for p in predict(glm[0].request) if p.fits]
    speeds = [p.tokens_per_s_per_gpu for p in ranked]
    first = ranked[0].layout
    print(f"\nGLM-5.2 on 64 x B200: {len(ranked):,} fitting layouts; best predicted {speeds[0]:,.1f} "
          f"({first.label} {first.recompute}, offload {first.levers.offload_fraction:g}, "
          f"{ranked[0].memory.total_gib:.1f} GiB)")
    for point in glm:
        predicted = predict_point(point)
        rank = 1 + sum(s > predicted.tokens_per_s_per_gpu for s in speeds)
        print(f"- {point.slug}: measured {point.tokens_per_s_per_gpu:,.1f}, predicted "
              f"{predicted.tokens_per_s_per_gpu:,.1f}, rank {rank:,} of {len(ranked):,} "
              f"(top {rank / len(ranked):.1%}){'' if predicted.fits else '; ' + predicted.reason}")
    for p in ranked[:3]:
        print(f"  above them: {p.layout.label} {p.layout.recompute}, offload {p.layout.levers.offload_fraction:g}, "
              f"{p.layout.max_tokens_per_gpu:,} tokens/GPU: {p.tokens_per_s_per_gpu:,.1f}; step parts "
              f"{p.step.parts_s()}")
    print(f"  measured layout's step parts: {predict_point(glm[0]).step.parts_s()}")
    _gpt_oss_torchtitan_8xh200(catalog)
    print(f"\n(median of the held-out errors' absolute values: {statistics.median(abs(r.error) for r in rows):.4f})")


def _gpt_oss_torchtitan_8xh200(catalog) -> None:
    """The full 24-layer gpt-oss-20b on 8 x H200 with torchtitan, predicted (no such run exists), beside the seeds'
    measured Megatron figure: the best fitting layout, and the one closest to the seeds' published layout."""
    seed = next(e.entry for e in catalog.recipes if e.slug == SEED_GPT_OSS)
    request = PlanRequest("gpt-oss-20b", "H200", 8, seed.workload.row_tokens, seed.workload.global_batch, "torchtitan")
    ranked = [p for p in predict(request) if p.fits]
    lay = seed.layout
    closest = next(p for p in ranked if (p.layout.tp, p.layout.pp, p.layout.cp, p.layout.ep, p.layout.dp,
                                         p.layout.rows_per_microbatch, p.layout.recompute)
                   == (lay.tp, lay.pp, lay.cp, lay.ep, lay.dp, lay.rows_per_microbatch, "none"))
    print(f"\ngpt-oss-20b (24 layers) on 8 x H200, torchtitan, global batch {request.global_batch} x "
          f"{request.row_tokens:,} tokens: PREDICTED (no run), beside the seeds' measured Megatron "
          f"{seed.result.tokens_per_s_per_gpu:,.1f} ({seed.layout.label})")
    for what, p in (("best fitting layout", ranked[0]), ("closest to the seeds' layout", closest)):
        i = p.interval
        print(f"- {what}: {p.layout.label} {p.layout.recompute} recompute, {p.layout.rows_per_microbatch} row(s) a "
              f"microbatch, eager: predicted {p.tokens_per_s_per_gpu:,.1f} (interval {i.low:,.1f}-{i.high:,.1f}; "
              f"{i.basis}), {p.memory.total_gib:.1f} GiB; "
              f"{p.tokens_per_s_per_gpu / seed.result.tokens_per_s_per_gpu:.2f}x the seeds' figure; step parts "
              f"{p.step.parts_s()}")


SEED_GPT_OSS = "gpt-oss-20b/h200/attune-tp1-pp1-ep4"


if __name__ == "__main__":
    main()
