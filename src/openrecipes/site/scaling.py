"""Weak-scaling sweeps of the public record on the site: one layout of one model on one GPU variant at growing GPU
counts (the entries sharing a `published.derivation.sweep` id), its published tokens/s per GPU against GPU count
beside the planner's prediction of the same points, with the prediction's range. A record page draws its sweeps
together on one plot, each numbered, so a record of thousands of sweeps costs one drawing per page.

The published points are the entries' figures; the predictions are plan/public_record.py's `compare` of each entry
(the planner's estimate of exactly that layout, labelled `predicted`), read from the public_record.json that
`openrecipes refresh` writes: the site never runs the predictor. A point the planner cannot express is drawn
without its prediction, and the reason is shown in its row.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from itertools import cycle
from pathlib import Path

from openrecipes.catalog.paths import DERIVED
from openrecipes.catalog.published import published_label
from openrecipes.errors import UserError
from openrecipes.site.plots import Line2D, _svg, inline_figure, inline_svg, plt
from openrecipes.site.record import MIN_POINTS, RecordRow, sweep_of

PREDICTIONS = DERIVED / "public_record.json"
STALE = "no stored prediction: run `openrecipes refresh`"


@dataclass(frozen=True)
class Prediction:
    """The planner's prediction of one published entry's own layout, as public_record.json stores it."""

    predicted: float | None
    low: float | None
    high: float | None
    reason: str | None  # why the planner cannot express the entry


@cache
def stored_predictions(path: Path = PREDICTIONS) -> dict[str, Prediction]:
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))["predictions"]
        return {slug: Prediction(p["predicted"], p["low"], p["high"], p["reason"]) for slug, p in stored.items()}
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise UserError(f"{path}: no readable predictions ({error}); run `openrecipes refresh`") from None


@dataclass(frozen=True)
class SweepPoint:
    row: RecordRow
    prediction: Prediction

    @property
    def gpus(self) -> int:
        return self.row.gpus

    @property
    def published(self) -> float:
        return self.row.entry.entry.result.tokens_per_s_per_gpu


@dataclass(frozen=True)
class Sweep:
    """The points of one sweep id, by GPU count."""

    sweep_id: str
    points: tuple[SweepPoint, ...]
    number: int  # its number on its page's plot

    @property
    def title(self) -> str:
        first = self.points[0].row
        summary, run = first.entry.entry, first.run
        source = (run.derivation.submitter if run.derivation else None) or run.reference.repository
        return (f"{summary.model}, {run.precision.upper()}, {published_label(run, None)} on {summary.gpu.variant} "
                f"({source}, {run.engine_version})")

    @property
    def anchor(self) -> str:
        return f"sweep-{self.sweep_id}"


def record_sweeps(rows: list[RecordRow]) -> list[Sweep]:
    """Every sweep among the rows of one record page (a model on one GPU type) with at least two GPU counts."""
    predictions = stored_predictions()
    groups: dict[str, list[RecordRow]] = {}
    for row in rows:
        if (sweep_id := sweep_of(row)) is not None:
            groups.setdefault(sweep_id, []).append(row)
    sweeps: list[Sweep] = []
    for sweep_id, group in sorted(groups.items()):
        if len({row.gpus for row in group}) >= MIN_POINTS:
            points = tuple(SweepPoint(row, predictions.get(row.entry.slug, Prediction(None, None, None, STALE)))
                           for row in sorted(group, key=lambda r: r.gpus))
            sweeps.append(Sweep(sweep_id, points, len(sweeps) + 1))
    return sweeps


def sweeps_svg(sweeps: list[Sweep], id_prefix: str) -> str:
    """A page's sweeps on one plot: published tokens/s per GPU against GPU count (log 2 x), a colour and a number per
    sweep, and the planner's prediction of each point with its range as an error bar (dashed, labelled predicted).
    Inline SVG, as the model pages' plots."""
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    with inline_figure(id_prefix, 6.4, 3.6) as (figure, axes):
        counts = sorted({p.gpus for sweep in sweeps for p in sweep.points})
        for sweep, colour in zip(sweeps, cycle(colours)):
            gpus = [p.gpus for p in sweep.points]
            axes.plot(gpus, [p.published for p in sweep.points], marker="o", color=colour)
            axes.annotate(str(sweep.number), (gpus[-1], sweep.points[-1].published), xytext=(4, 0),
                          textcoords="offset points", va="center", fontsize=8, color=colour)
            predicted = [p for p in sweep.points if p.prediction.predicted is not None]
            if predicted:
                # The range is drawn as it is, not as error bars around the prediction: a range set by alike points'
                # errors may lie wholly above or below its prediction.
                xs, values = [p.gpus for p in predicted], [p.prediction.predicted or 0.0 for p in predicted]
                axes.plot(xs, values, marker="s", linestyle="--", color=colour, alpha=0.75)
                ranged = [p for p in predicted if p.prediction.low is not None and p.prediction.high is not None]
                axes.vlines([p.gpus for p in ranged], [p.prediction.low or 0.0 for p in ranged],
                            [p.prediction.high or 0.0 for p in ranged], color=colour, alpha=0.75)
        axes.set_xscale("log", base=2)
        axes.set_xticks(counts, [str(c) for c in counts])
        axes.minorticks_off()
        axes.set_xlabel("GPUs")
        axes.set_ylabel("tokens/s per GPU")
        axes.ticklabel_format(axis="y", style="plain", useOffset=False)
        axes.set_ylim(bottom=0)
        axes.legend([Line2D([], [], color="#4a5568", marker="o"),
                     Line2D([], [], color="#4a5568", marker="s", linestyle="--")],
                    ["published", "predicted (range)"], fontsize=7, frameon=False, loc="lower left")
        return inline_svg(_svg(figure), id_prefix, {})
