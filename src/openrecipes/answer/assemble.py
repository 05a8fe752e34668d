"""An `Answer` assembled from the catalog and the planner's part (a `PredictedPoint`, computed live by the terminal
or read from derived/answers/ by the site): the same function on both faces, so they never differ.

Lines come in one order: our measured recipes at the point, then published entries there, then the planner's best
layout on each engine that runs the model; fastest first within each kind. Each is priced for the budget through
figures.py and the first instance of hardware/instances.yaml that rents the GPU type (as the planner prices).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from openrecipes import figures
from openrecipes.answer.model import Answer, Line, PredictedPoint, Question
from openrecipes.catalog.hardware import ReferenceTables, precision_peak_flops, variant_id
from openrecipes.catalog.published import published_label
from openrecipes.catalog.store import Catalog, CatalogEntry, RecipeEntry, SummaryEntry

BF16 = "BF16"
# A source's own words about how it ran (NVIDIA's force-balanced routing), quoted in the entry's note by its importer.
SOURCE_WORDS = re.compile(r'The source: "([^"]+)"')
Evidence = Callable[[CatalogEntry], str]  # an entry's evidence level, as `openrecipes audit` gives it


def precision_family(precision: str | None) -> str:
    """fp8-current-scaling and fp8 are both FP8; an entry that states none is BF16 (the seed pages' summaries)."""
    return precision.split("-")[0].upper() if precision else BF16


def usd_per_gpu_hour(tables: ReferenceTables, gpu_type: str) -> tuple[float, str] | None:
    """$ per GPU-hour of the first instance (by name) that rents the GPU type, and its name; None: none does."""
    priced = sorted(name for name, row in tables.instances.items() if row.gpu == gpu_type)
    if not priced:
        return None
    row = tables.instances[priced[0]]
    return figures.usd_per_gpu_hour(row.usd_per_hour, row.gpus), priced[0]


def answer(question: Question, catalog: Catalog, evidence: Evidence, predicted: PredictedPoint | None,
           not_predicted: str | None = None) -> Answer:
    """The answer to `question`: `predicted` is the planner's part at its GPU type and count (None with the reason
    `not_predicted` where the planner is not asked)."""
    tables = catalog.tables
    price = usd_per_gpu_hour(tables, question.gpu_type)
    rate = price[0] if price else None

    def priced(tokens_per_s: float) -> tuple[float, float | None]:
        hours = figures.time_to_train_hours(question.tokens, tokens_per_s, question.gpus)
        return hours, (figures.cost_to_train_usd(question.tokens, tokens_per_s, rate) if rate else None)

    lines = [*_measured(question, catalog, evidence, priced), *_published(question, catalog, evidence, priced)]
    reasons = []
    spec = tables.gpus[question.gpu_type]
    if question.precision is not None and precision_peak_flops(spec, question.precision.lower()) is None:
        reasons.append(f"no {question.precision} peak for {variant_id(spec, tables)} in hardware/gpus.yaml: it "
                       f"has no tensor cores for {question.precision}, so nothing is predicted in it")
    elif question.precision not in (None, BF16):
        reasons.append(f"predicted: the answer predicts BF16 only; for {question.precision} ask `openrecipes plan "
                       f"{question.model} --gpu {question.gpu_type} --gpus {question.gpus} --precision "
                       f"{question.precision.lower()}`")
    elif predicted is None:
        reasons.append(not_predicted or "predicted: not asked")
    else:
        for p in predicted.lines:
            hours, usd = priced(p.tokens_per_s_per_gpu)
            lines.append(Line(kind="predicted", evidence="predicted", name=p.engine, slug=None, precision=BF16,
                              layout=p.layout, tokens_per_s_per_gpu=p.tokens_per_s_per_gpu, low=p.low, high=p.high,
                              hours=hours, usd=usd, get=p.get))
        reasons += predicted.not_offered
    if not lines and not reasons:
        reasons.append("nothing measured, published or predicted at this point")
    if price is None:
        reasons.append(f"no price: no instance of hardware/instances.yaml rents {question.gpu_type}; wall times "
                       "are shown, costs are not")
    return Answer(question=question, lines=tuple(lines), not_offered=tuple(reasons))


def _at_point(question: Question, entry: RecipeEntry | SummaryEntry, precision: str | None) -> bool:
    gpu = entry.entry.gpu
    return ((entry.entry.model, gpu.type, gpu.count) == (question.model, question.gpu_type, question.gpus)
            and question.precision in (None, precision_family(precision)))


def _part_caveat(catalog: Catalog, question: Question, variant: str) -> tuple[str, ...]:
    """A figure measured on another variant of the type than the part a user rents says so."""
    rented = variant_id(catalog.tables.gpus[question.gpu_type], catalog.tables)
    return () if variant == rented else (f"run on {variant}, not the {rented} a user rents",)


def _measured(question: Question, catalog: Catalog, evidence: Evidence,
              priced: Callable[[float], tuple[float, float | None]]) -> list[Line]:
    found = []
    for entry in catalog.recipes:
        recipe = entry.entry
        if not _at_point(question, entry, recipe.workload.precision):
            continue
        work = recipe.workload
        hours, usd = priced(recipe.result.tokens_per_s_per_gpu)
        found.append(Line(
            kind="measured", evidence=evidence(entry), name=entry.name, slug=entry.slug,
            precision=precision_family(work.precision),
            layout=f"{recipe.layout.label}, {work.row_tokens:,}-token rows, global batch {work.global_batch:,}",
            tokens_per_s_per_gpu=recipe.result.tokens_per_s_per_gpu, low=None, high=None, hours=hours, usd=usd,
            get=f"{entry.path.as_posix()} (openrecipes show {entry.name})",
            caveats=_part_caveat(catalog, question, recipe.gpu.variant)))
    return sorted(found, key=lambda line: -line.tokens_per_s_per_gpu)


def _published(question: Question, catalog: Catalog, evidence: Evidence,
               priced: Callable[[float], tuple[float, float | None]]) -> list[Line]:
    found = []
    for entry in (*catalog.summaries, *catalog.record):
        summary = entry.entry
        if not _at_point(question, entry, summary.precision):
            continue
        run = summary.published
        batch = f", global batch {run.global_batch:,}" if run and run.global_batch else ""
        layout = (f"{published_label(run, summary.gpu.count)}, {run.seq_length:,}-token rows{batch}" if run
                  else "layout not published")
        hours, usd = priced(summary.result.tokens_per_s_per_gpu)
        found.append(Line(
            kind="published", evidence=evidence(entry), name=entry.name, slug=entry.slug,
            precision=precision_family(summary.precision), layout=layout,
            tokens_per_s_per_gpu=summary.result.tokens_per_s_per_gpu, low=None, high=None, hours=hours, usd=usd,
            get=f"{entry.path.as_posix()} (openrecipes show {entry.name}): its source publishes no command",
            caveats=(*SOURCE_WORDS.findall(" ".join(summary.note.split())),
                     *_part_caveat(catalog, question, summary.gpu.variant))))
    return sorted(found, key=lambda line: -line.tokens_per_s_per_gpu)
