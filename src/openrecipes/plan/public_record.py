"""The planner held against the public record: every published entry with a typed layout (docs/public-record.md)
beside the planner's prediction of exactly that layout, and the errors per engine, GPU type and scale band.

Every entry the planner can express is a measured point of the fit (openrecipes.plan.calibrate.speed_points),
so its error here is its leave-one-out error (heldout.json: every fitted value refitted without it); an entry
added since the fit (openrecipes.plan.fitted_on) is predicted by the fit as it stands, which never saw it. An entry the
planner cannot express (a precision or a GPU type it has no term for, a layout its rules refuse, a workload the
source does not give) is listed with the reason, never dropped. `openrecipes refresh` writes the summary to
public_record.json (`write`); tests/test_plan_public_record.py fails when that file is stale.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path

from openrecipes.atomic import write_atomic
from openrecipes.catalog.paths import DERIVED, default_catalog_root
from openrecipes.catalog.published import published_label
from openrecipes.catalog.store import Catalog, SummaryEntry, load_catalog
from openrecipes.engines.registry import engine_named, engine_of_framework
from openrecipes.errors import UserError
from openrecipes.plan.accuracy import spearman
from openrecipes.plan.fitted_on import fitted_slugs, is_fitted
from openrecipes.plan.layouts import LOW_PRECISIONS, Layout, stage_split
from openrecipes.plan.levers import measured_factors
from openrecipes.plan.points import SpeedPoint
from openrecipes.plan.predict import PlanRequest, Prediction, context, predict_layout
from openrecipes.plan.trust import band_of, read_derived, stored_points

SUMMARY_FILE = DERIVED / "public_record.json"
# The caveat a source states, copied into its entries' notes, that its MoE runs spread tokens evenly over the experts
# (Megatron-Bridge's performance summary: "we force-balance the token distribution among experts")
FORCE_BALANCED = "force-balance the token distribution among experts"
WITHIN = 0.20  # the share of entries within this relative error is reported
RANKED_GROUP = 4  # entries of one model, engine and GPU type needed for a rank agreement


@dataclass(frozen=True)
class Compared:
    slug: str  # the entry's catalog slug (model/gpu/file stem)
    name: str  # the entry's file stem
    model: str
    gpu_type: str
    gpus: int
    engine: str  # the planner's engine name
    precision: str
    layout: str  # the layout as published
    published: float  # tokens/s per GPU
    predicted: float | None  # the planner's prediction of exactly that layout; None where it cannot express it
    low: float | None  # the prediction's range
    high: float | None
    reason: str | None  # why the planner cannot express the entry
    held_out: float | None = None  # the prediction with every fitted value refitted without this entry (heldout.json)

    @property
    def error(self) -> float | None:
        """The held-out error: the entry is a point of the fit, so only its leave-one-out prediction is honest."""
        return None if self.held_out is None else self.held_out / self.published - 1


def held_out() -> dict[str, float]:
    """Each fitted point's held-out prediction (heldout.json, openrecipes.plan.heldout), by slug."""
    return {point.name: point.held_out for point in stored_points()}


def _planned(entry: SummaryEntry, engine: str, layers: int) -> tuple[PlanRequest, Layout]:
    """The planner's request and layout of a published entry; UserError naming what it cannot express."""
    summary, run = entry.entry, entry.entry.published
    assert run is not None
    lay, gpus = run.layout, summary.gpu.count
    if gpus % (lay.tp * lay.pp * lay.cp):
        raise UserError(f"{gpus} GPUs are not a multiple of TP x PP x CP")
    dp = gpus // (lay.tp * lay.pp * lay.cp)
    rows = run.micro_batch or (run.local_batch // (run.gradient_accumulation or 1) if run.local_batch else None)
    global_batch = run.global_batch or (run.local_batch * dp if run.local_batch else None)
    if rows is None or global_batch is None:
        raise UserError("the source gives no micro batch or global batch")
    modelled = engine_named(engine)
    if modelled.layout.fsdp and lay.fsdp and lay.fsdp < dp * lay.cp:
        raise UserError(f"HSDP (FSDP {lay.fsdp} of {dp * lay.cp} data-parallel ranks): replication not modelled")
    split = stage_split(layers, lay.pp)
    if split is None:
        raise UserError(f"PP {lay.pp} over {layers} layers")
    vpp = lay.vp or 1
    recompute = run.recompute or "none"
    # ETP unpublished: 1, as Megatron-Bridge's MoE recipes set expert_tensor_parallel_size (TP x EP need not divide).
    low = run.precision != "bf16"
    levers = modelled.levers_of(
        compile="torch.compile" in run.techniques,
        float8=run.precision.removeprefix("fp8-") if modelled.has_lever("float8") and low else None,
        low_precision=run.precision if modelled.has_lever("low_precision") and low else None,
        # Megatron's FSDP column: 0 for the distributed optimizer, else Megatron-FSDP over DP x CP
        megatron_fsdp=not modelled.layout.fsdp and bool(lay.fsdp))
    layout = Layout(engine, lay.tp, lay.pp, vpp, lay.cp, lay.ep or 1, lay.etp or 1, dp, split, recompute, rows,
                    rows * run.seq_length // lay.cp, levers)
    return PlanRequest(summary.model, summary.gpu.type, gpus, run.seq_length, global_batch, engine,
                       balanced_routing=FORCE_BALANCED in summary.note, variant=summary.gpu.variant), layout


def _expressible_precision(engine: str, precision: str, gpu_type: str) -> str | None:
    if precision == "bf16":
        return None
    if engine_named(engine).has_lever("float8") and precision in ("fp8-tensorwise", "fp8-rowwise"):
        if (gpu_type, f"float8 {precision.removeprefix('fp8-')}") in measured_factors():
            return None
        # `plan` times it at the datasheet's FP8 peak (openrecipes.plan.compute); the fit keeps to measured terms
        return f"{precision}: no pair of our runs measured its time on {gpu_type} (planned from the datasheet)"
    if engine_named(engine).has_lever("low_precision") and precision in LOW_PRECISIONS:
        return None
    return f"{precision}: the planner has no {engine} time term for it"


def _expressed(entry: SummaryEntry, catalog: Catalog) -> tuple[PlanRequest, Layout, Prediction] | str:
    """The planner's request, layout and prediction of a published entry, or why it cannot express the entry."""
    summary, run = entry.entry, entry.entry.published
    assert run is not None
    engine = engine_of_framework(run.engine).name
    reason = _expressible_precision(engine, run.precision, summary.gpu.type)
    if reason is None and run.task == "lora":
        reason = "LoRA fine-tuning: the planner times full training (every weight's gradient and optimizer update)"
    card = catalog.tables.models.get(summary.model)
    if reason is None and card is None:
        reason = f"no model card {summary.model}"
    if reason is not None or card is None:
        return reason or ""
    try:
        request, layout = _planned(entry, engine, card.layers)
        return request, layout, predict_layout(context(request, catalog.tables), layout)
    except (UserError, KeyError, ZeroDivisionError, ValueError) as error:
        return str(error).strip("'")


def compare(entry: SummaryEntry, catalog: Catalog) -> Compared:
    """One published entry beside the planner's prediction of its own layout, or the reason it cannot be made."""
    summary, run = entry.entry, entry.entry.published
    assert run is not None
    expressed = _expressed(entry, catalog)
    row = partial(Compared, entry.slug, entry.name, summary.model, summary.gpu.type, summary.gpu.count,
                  engine_of_framework(run.engine).name, run.precision, published_label(run, summary.gpu.count),
                  summary.result.tokens_per_s_per_gpu)
    if isinstance(expressed, str):
        return row(None, None, None, expressed)
    prediction = expressed[2]
    interval = prediction.interval
    predicted = round(prediction.tokens_per_s_per_gpu, 1)
    # an entry added since the fit was never fitted on: its prediction is held out as it stands
    return row(predicted, interval.low, interval.high, None,
               held_out().get(entry.slug) if is_fitted(entry.slug, fitted_slugs()) else predicted)


def record_points(catalog: Catalog) -> list[SpeedPoint]:
    """Every published entry the planner can express (`compare` gives no reason against it), as a measured point of
    its engine and GPU type."""
    found = []
    for entry in catalog.record:
        if entry.entry.published is None or isinstance(expressed := _expressed(entry, catalog), str):
            continue
        request, layout, _ = expressed
        found.append(SpeedPoint(entry.slug, request, layout, entry.entry.result.tokens_per_s_per_gpu))
    return found


def compared(catalog: Catalog, model: str | None = None) -> list[Compared]:
    """Every published entry with a typed layout (of one model, where given), compared."""
    return [compare(entry, catalog) for entry in catalog.record
            if entry.entry.published is not None and (model is None or entry.entry.model == model)]


@dataclass(frozen=True)
class GroupAccuracy:
    engine: str
    gpu_type: str
    band: str
    entries: int
    expressed: int
    median_abs_error: float | None
    worst_error: float | None
    within_20_percent: float | None  # share of the expressed entries
    range_coverage: float | None  # share whose published figure lies inside the prediction's range


def held_out_errors(rows: list[Compared]) -> list[float]:
    return [error for error in (r.error for r in rows) if error is not None]


def error_figures(errors: list[float]) -> tuple[float | None, float | None, float | None]:
    """The median absolute error, the error of the largest magnitude (its sign kept) and the share within WITHIN,
    rounded; None without errors."""
    if not errors:
        return None, None, None
    worst = max(errors, key=abs)
    return (round(statistics.median(abs(e) for e in errors), 4), round(worst, 4),
            round(sum(abs(e) <= WITHIN for e in errors) / len(errors), 4))


def accuracy(rows: list[Compared]) -> list[GroupAccuracy]:
    groups: dict[tuple[str, str, str], list[Compared]] = {}
    for row in rows:
        groups.setdefault((row.engine, row.gpu_type, band_of(row.gpus)), []).append(row)
    found = []
    for (engine, gpu_type, band), group in sorted(groups.items()):
        errors = held_out_errors(group)
        expressed = [r for r in group if r.predicted is not None]
        found.append(GroupAccuracy(
            engine, gpu_type, band, len(group), len(errors), *error_figures(errors),
            round(sum(r.low <= r.published <= r.high for r in expressed  # type: ignore[operator]
                      ) / len(expressed), 4) if expressed else None))
    return found


def rank_agreement(rows: list[Compared]) -> dict[str, tuple[int, float]]:
    """Spearman of predictions against published figures within a model, engine and GPU type with enough entries."""
    groups: dict[str, list[Compared]] = {}
    for row in rows:
        if row.predicted is not None:
            groups.setdefault(f"{row.model}, {row.engine} on {row.gpu_type}", []).append(row)
    return {name: (len(group), round(spearman([r.held_out for r in group],  # type: ignore[misc]
                                              [r.published for r in group]), 3))
            for name, group in sorted(groups.items()) if len(group) >= RANKED_GROUP
            and len({r.published for r in group}) > 1}


def summary(root: Path | None = None) -> dict:
    """What public_record.json holds: per group and overall accuracy, rank agreement, every inexpressible entry."""
    rows = compared(load_catalog(root or default_catalog_root()))
    errors = held_out_errors(rows)
    median, _, within = error_figures(errors)
    return {
        "entries": len(rows), "expressed": len(errors), "median_abs_error": median, "within_20_percent": within,
        "groups": [asdict(g) for g in accuracy(rows)],
        "rank_agreement": {k: list(v) for k, v in rank_agreement(rows).items()},
        "not_expressed": [{"name": r.name, "reason": r.reason} for r in rows if r.reason is not None],
        # each entry's prediction, which the site's weak-scaling plots read (the site never runs the predictor)
        "predictions": {r.slug: {"predicted": r.predicted, "low": r.low, "high": r.high, "reason": r.reason}
                        for r in rows},
    }


def write(root: Path | None = None) -> Path:
    write_atomic(SUMMARY_FILE, json.dumps(summary(root), indent=1) + "\n")
    return SUMMARY_FILE


def stored_summary() -> dict:
    return read_derived(SUMMARY_FILE)


