"""The site's plots as self-contained SVG: no fonts, scripts or anything else to fetch.

The run plots are files loaded as <img> (text drawn as paths). The Pareto plots sit inside the page as inline SVG,
so their points can be links: text stays text, and matplotlib's CSS becomes presentation attributes, since the
pages' CSP allows no inline style. No plot carries a date or a random id: the same catalog draws the same bytes.
"""

from __future__ import annotations

import io
import re
from collections import defaultdict
from contextlib import contextmanager
from functools import cache
from html import escape, unescape
from itertools import cycle
from math import floor

import matplotlib

matplotlib.use("svg")

import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.backends.backend_svg import FigureCanvasSVG  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

from openrecipes.site.pages import ParetoPoint  # noqa: E402
from openrecipes.site.record import ScalingPoint  # noqa: E402

REDERIVED = "re-derived"  # the one evidence level a plot draws filled

plt.rcParams.update({
    "svg.fonttype": "path",
    "svg.hashsalt": "openrecipes",
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#e3e6ea",
    "axes.edgecolor": "#8a9099",
})
GPU_COLOURS = ["#2b6cb0", "#c05621", "#2f855a", "#6b46c1", "#b83280", "#2c7a7b", "#744210", "#4a5568"]
# A recipe's marker area in points² per GPU, on a square-root scale so 256 GPUs stay readable beside 8.
MARKER_AREA_PER_SQRT_GPU = 9.0


def plain(text: str) -> str:
    """Text drawn as written: matplotlib would read "$...$" in a recipe name as mathematics."""
    return text.replace("$", r"\$")


def _svg(figure) -> str:
    """The figure cropped to its contents, as bbox_inches="tight" crops it, drawn once: "tight" draws the figure
    a first time only to lay it out, but its box is found without that draw (ticks, title, labels and legend are
    placed when measured), the same box to a millionth of a point."""
    box = figure.get_tightbbox().padded(plt.rcParams["savefig.pad_inches"])
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", bbox_inches=box, metadata={"Date": None})
    return buffer.getvalue()


@cache
def _figure(width: float, height: float) -> Figure:
    figure = Figure(figsize=(width, height))
    FigureCanvasSVG(figure)  # measured by the SVG renderer, as pyplot's figures are (not by Agg's)
    return figure


@contextmanager
def inline_figure(id_prefix: str, width: float, height: float, rows: int = 1, sharex: bool = False):  # noqa: ANN201
    """An emptied figure of this size and its axes (Axes or an array), for a plot set inside a page: its text stays
    text and its ids are salted with the plot's prefix. A site of many plots makes one figure of each size and clears
    it for the next plot (making a figure costs more than clearing one; a cleared figure draws the same bytes)."""
    with plt.rc_context({"svg.fonttype": "none", "font.family": "sans-serif", "font.sans-serif": ["DejaVu Sans"],
                         "svg.hashsalt": id_prefix}):
        figure = _figure(width, height)
        figure.clear()
        yield figure, figure.subplots(rows, 1, sharex=sharex)


def _marker_area(gpus: int) -> float:
    return MARKER_AREA_PER_SQRT_GPU * gpus ** 0.5


# Label placement: candidate offsets (points) from a marker's edge, tried in order until one is free.
_LABEL_FONT = 8.0
_LABEL_OFFSETS = [(1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (-1, 1), (1, -1), (-1, -1)]
_LABEL_RINGS = (2.0, 9.0, 18.0, 30.0)


def _label_box(x: float, y: float, text: str) -> tuple[float, float, float, float]:
    width, height = 0.62 * _LABEL_FONT * len(text) + 2, _LABEL_FONT + 2
    return x - width / 2, y - height / 2, x + width / 2, y + height / 2


def _overlaps(a, b) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


class _Taken:
    """The boxes already placed, filed under every grid cell they cover: two boxes that overlap share a cell, so
    a candidate is checked against its cells' boxes only, not every box of a plot of hundreds of points."""

    CELL = 24.0  # points: about a three-digit label's width

    def __init__(self) -> None:
        self.cells: defaultdict[tuple[int, int], list[tuple[float, float, float, float]]] = defaultdict(list)

    def _cells(self, box) -> list[tuple[int, int]]:
        columns = range(floor(box[0] / self.CELL), floor(box[2] / self.CELL) + 1)
        return [(i, j) for i in columns for j in range(floor(box[1] / self.CELL), floor(box[3] / self.CELL) + 1)]

    def add(self, box) -> None:
        for cell in self._cells(box):
            self.cells[cell].append(box)

    def overlaps(self, box) -> bool:
        return any(_overlaps(box, other) for cell in self._cells(box) for other in self.cells.get(cell, ()))


def _place_labels(axes, points: list[ParetoPoint], numbered: list[ParetoPoint]) -> list[tuple[float, float]]:
    """Each numbered point's label centre as an offset in points from its marker, clear of every other label and
    of every marker (greedy, fastest point first): two recipes with equal figures get two labels, so each stays a
    link."""
    to_points = 72.0 / axes.figure.dpi
    # One transform of every point at once: one call per point is most of a large plot's placement.
    centres = list(axes.transData.transform([(p.usd_per_million_tokens, p.tokens_per_s_per_gpu) for p in points])
                   * to_points)
    radii = [(_marker_area(p.gpus) ** 0.5) / 2 for p in points]
    bbox = axes.get_window_extent()
    frame = (bbox.x0 * to_points, bbox.y0 * to_points, bbox.x1 * to_points, bbox.y1 * to_points)
    taken = _Taken()
    for (x, y), r in zip(centres, radii, strict=True):
        taken.add((x - r, y - r, x + r, y + r))
    offsets = []
    where = {id(p): (centre, radius) for p, centre, radius in zip(points, centres, radii, strict=True)}
    for point in numbered:
        (x, y), radius = where[id(point)]
        text = str(point.number)
        _, _, half_w, half_h = _label_box(0, 0, text)
        candidates = ((sx * (radius + ring + half_w), sy * (radius + ring + half_h))
                      for ring in _LABEL_RINGS for sx, sy in _LABEL_OFFSETS)
        choice = next((d for d in candidates if _fits(_label_box(x + d[0], y + d[1], text), frame, taken)),
                      (radius + 2 + half_w, 0.0))
        taken.add(_label_box(x + choice[0], y + choice[1], text))
        offsets.append(choice)
    return offsets


def _fits(box, frame, taken: _Taken) -> bool:
    """Inside the axes' frame and clear of every label and marker placed so far."""
    return (frame[0] <= box[0] and box[2] <= frame[2] and frame[1] <= box[1] and box[3] <= frame[3]
            and not taken.overlaps(box))


def pareto_svg(points: list[ParetoPoint], front: list[ParetoPoint], link: dict[int, tuple[str, str]],
               id_prefix: str, numbered: list[ParetoPoint] | None = None) -> str:
    """Tokens/s per GPU against $ per 1M tokens, one colour per GPU type, area by GPU count, summaries hollow;
    every point of `numbered` (default: all) numbered (its number in the key below the plot), and marker and
    number links to `link[number]` = (href, accessible name). Returned as inline SVG markup (links in an <img>
    could not be followed). A plot of thousands of points numbers its front only: thousands of numbers would
    cover each other and cost most of the drawing."""
    numbered = points if numbered is None else numbered
    with inline_figure(id_prefix, 7.2, 3.9) as (figure, axes):
        gpu_types = sorted({p.gpu_type for p in points})
        precisions = sorted({p.precision for p in points}, key=lambda precision: (precision != "bf16", precision))
        for colour, gpu_type in zip(cycle(GPU_COLOURS), gpu_types):
            for summary in (False, True):
                for precision in precisions:
                    group = [p for p in points if p.gpu_type == gpu_type and p.entry.is_summary == summary
                             and p.precision == precision]
                    if not group:
                        continue
                    tag = "" if precision == "bf16" else f" {precision.upper()}"
                    markers = axes.scatter([p.usd_per_million_tokens for p in group],
                                           [p.tokens_per_s_per_gpu for p in group],
                                           s=[_marker_area(p.gpus) for p in group], alpha=0.75, linewidths=1.2,
                                           marker=_precision_marker(precision),
                                           facecolors="none" if summary else colour, edgecolors=colour,
                                           label=plain(f"{gpu_type}{tag}{' (published summary)' if summary else ''}"))
                    markers.set_urls([link[p.number][0] for p in group])
        axes.plot([p.usd_per_million_tokens for p in front], [p.tokens_per_s_per_gpu for p in front],
                  color="#1a202c", linewidth=1, linestyle="--", label="Pareto front", zorder=1)
        costs = [p.usd_per_million_tokens for p in points]
        if max(costs) / min(costs) > 20:
            axes.set_xscale("log")
        axes.margins(0.12, 0.15)
        axes.set_xlabel("$ per 1M tokens (lower is better)")
        axes.set_ylabel("tokens/s per GPU (higher is better)")
        legend = axes.legend(fontsize=7, frameon=True, framealpha=0.9, edgecolor="none", loc="best",
                             markerscale=0.6)
        axes.autoscale_view()  # fixes the axes' limits (margins, log scale), which the label placement reads
        # Every point lies inside the axes (the limits are the data's, with margins): annotation_clip=False skips
        # checking that each time a label is measured or drawn.
        for point, (dx, dy) in zip(numbered, _place_labels(axes, points, numbered), strict=True):
            axes.annotate(str(point.number), (point.usd_per_million_tokens, point.tokens_per_s_per_gpu),
                          textcoords="offset points", xytext=(dx, dy), ha="center", va="center",
                          fontsize=_LABEL_FONT, fontweight="bold", color="#1a202c", url=link[point.number][0],
                          annotation_clip=False)
        # "best" measures every label each time the legend is measured or drawn: found once, with the labels in
        # place, and kept.
        found, anchor = legend.get_window_extent(), legend.get_bbox_to_anchor()
        legend.set_loc(((found.x0 - anchor.x0) / anchor.width, (found.y0 - anchor.y0) / anchor.height))
        return inline_svg(_svg(figure), id_prefix, {href: name for href, name in link.values()})


# A scaling plot's marker per precision family, so BF16 and the 8-bit and 4-bit formats read apart without colour.
_PRECISION_MARKERS = {"bf16": "o", "fp8": "s", "mxfp8": "D", "nvfp4": "^"}


def _precision_marker(precision: str) -> str:
    family = next((key for key in ("mxfp8", "nvfp4", "fp8") if precision.startswith(key)), "bf16")
    return _PRECISION_MARKERS[family]


def scaling_svg(points: list[ScalingPoint], id_prefix: str) -> str:
    """Tokens/s per GPU (top) and MFU (bottom) against GPU count: one colour per GPU type, one marker per precision,
    re-derived recipes filled, everything else (author-reported, failed, audited) hollow; every marker a link to its run
    (ScalingPoint.href, relative to the site root). Inline SVG, as pareto_svg."""
    with inline_figure(id_prefix, 7.2, 5.6, 2, sharex=True) as (figure, (speed, mfu)):
        gpu_types = list(dict.fromkeys(p.gpu_type for p in points))
        colours = dict(zip(gpu_types, cycle(GPU_COLOURS)))
        groups: defaultdict[tuple[str, str, bool], list[ScalingPoint]] = defaultdict(list)
        for point in points:
            groups[(point.gpu_type, _precision_marker(point.precision), point.evidence == REDERIVED)].append(point)
        for (gpu_type, marker, rederived), group in groups.items():
            colour = colours[gpu_type]
            style = {"marker": marker, "s": 36, "linewidths": 1.2, "edgecolors": colour, "alpha": 0.8,
                     "facecolors": colour if rederived else "none"}
            speed.scatter([p.gpus for p in group], [p.tokens_per_s_per_gpu for p in group], **style) \
                .set_urls([p.href for p in group])
            with_mfu = [(p, p.mfu) for p in group if p.mfu is not None]
            mfu.scatter([p.gpus for p, _ in with_mfu], [100 * value for _, value in with_mfu], **style) \
                .set_urls([p.href for p, _ in with_mfu])
        counts = sorted({p.gpus for p in points})
        mfu.set_xscale("log", base=2)
        mfu.set_xticks(counts, [str(c) for c in counts])
        mfu.minorticks_off()
        mfu.set_xlabel("GPUs")
        speed.set_ylabel("tokens/s per GPU")
        mfu.set_ylabel("MFU, % of dense BF16 peak")
        speed.ticklabel_format(axis="y", style="plain", useOffset=False)
        for axes in (speed, mfu):
            axes.margins(0.08, 0.12)
        handles = [Line2D([], [], linestyle="", marker="o", color=colours[g], label=plain(g)) for g in gpu_types]
        levels = sorted({p.evidence for p in points}, key=lambda level: (level != REDERIVED, level))
        handles += [Line2D([], [], linestyle="", marker="o", color="#4a5568", label=level,
                           markerfacecolor=None if level == REDERIVED else "none") for level in levels]
        shapes = {_precision_marker(p.precision) for p in points}
        handles += [Line2D([], [], linestyle="", marker=marker, color="#a0aec0", label=f"shape: {name.upper()}")
                    for name, marker in _PRECISION_MARKERS.items() if marker in shapes]
        speed.legend(handles=handles, fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
        return inline_svg(_svg(figure), id_prefix, {p.href: p.label for p in points})


_STYLE = re.compile(r'\sstyle="([^"]*)"')
_ID = re.compile(r'\bid="([^"]+)"')
_ID_USE = re.compile(r'(id="|"#|url\(#)([^"()]+)("|\))')  # an id where it is defined or referred to
_GEOMETRY = re.compile(r'\b(d|x|y|transform)="([^"]*)"')
_DECIMALS = re.compile(r"(\d\.\d)\d+")


def inline_svg(svg: str, id_prefix: str, link_names: dict[str, str]) -> str:
    """matplotlib's SVG made fit to sit inside a page under the site's CSP: no prolog, metadata or <style>
    (CSS declarations become presentation attributes), ids unique to this plot, links opened in the same
    tab with an accessible name, and a viewBox that scales to the column width."""
    svg = svg[svg.index("<svg"):]
    svg = re.sub(r"<metadata>.*?</metadata>\s*", "", svg, flags=re.S)
    svg = re.sub(r"<style[^>]*>.*?</style>\s*", "", svg, flags=re.S)
    svg = _STYLE.sub(lambda m: "".join(f' {name.strip()}="{value.strip()}"' for name, _, value in
                                       (d.partition(":") for d in m.group(1).split(";") if d.strip())), svg)
    ids = set(_ID.findall(svg))  # one pass over the text, not one per id (a plot of 1,000 points has 1,000 ids)
    svg = _ID_USE.sub(lambda m: f"{m[1]}{id_prefix}-{m[2]}{m[3]}" if m[2] in ids else m[0], svg)
    svg = re.sub(r'<a xlink:href="([^"]*)" target="_blank">',
                 lambda m: f'<a href="{m.group(1)}" aria-label="{escape(link_names.get(unescape(m.group(1)), ""))}">',
                 svg)
    # A tenth of a point is finer than any screen shows; the page carries a fifth fewer bytes per plot.
    svg = _GEOMETRY.sub(lambda m: m.group(1) + '="' + _DECIMALS.sub(r"\1", m.group(2)) + '"', svg)
    svg = re.sub(r"\n\s+", "\n", svg)
    svg = re.sub(r'<svg [^>]*viewBox="([^"]+)"[^>]*>',
                 lambda m: f'<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" '
                           f'viewBox="{m.group(1)}" class="plot-svg" role="group">', svg, count=1)
    return svg


@cache
def _shared_run_axes() -> Axes:
    axes = _figure(7.2, 3.2).subplots()
    # Values as written, never as an offset or power of ten above the axis: so nothing ever sits where the title
    # does, and the title is placed on the axes' top instead of searched for at every measure and draw.
    axes.ticklabel_format(axis="y", style="plain", useOffset=False)
    return axes


def _run_axes() -> Axes:
    """The axes every run plot is drawn on, emptied of the last plot's lines and shading (each plot sets its own
    title, labels and legend): making a figure and its ticks costs more than drawing a run plot's few lines, and
    a plot draws the same bytes whichever plot came before it."""
    axes = _shared_run_axes()
    for artist in [*axes.lines, *axes.patches]:
        artist.remove()
    axes.relim()
    return axes


def loss_svg(title: str, curves: dict[str, tuple[list[int], list[float]]]) -> bytes:
    """Loss per step of each arm (candidate, reference) on one axis."""
    axes = _run_axes()
    # Arms that agree overlap exactly: the later arm is drawn dashed with hollow markers so both stay visible.
    for i, ((label, (steps, losses)), colour) in enumerate(zip(curves.items(), GPU_COLOURS, strict=False)):
        axes.plot(steps, losses, marker="o", markersize=5 - 2 * i, linewidth=1.2, color=colour, label=label,
                  linestyle="-" if i == 0 else "--", markerfacecolor=colour if i == 0 else "none")
    return _run_plot(axes, title, "loss")


def step_time_svg(title: str, steps: list[int], seconds: list[float], window: tuple[int, int]) -> bytes:
    """Step times of the measured run, the scored window shaded."""
    axes = _run_axes()
    axes.axvspan(window[0] - 0.5, window[1] + 0.5, color="#ebf4ff", label=f"scored window {window[0]}–{window[1]}")
    axes.plot(steps, seconds, marker="o", markersize=3, linewidth=1.2, color=GPU_COLOURS[0], label="step time")
    return _run_plot(axes, title, "seconds")


def _run_plot(axes: Axes, title: str, ylabel: str) -> bytes:
    """A run plot's labels, title and legend, drawn."""
    axes.set_xlabel("step (from 0)")
    axes.set_ylabel(ylabel)
    axes.set_title(plain(title), loc="left", fontsize=10, y=1.0)
    axes.legend(fontsize=8, frameon=False)
    return _svg(axes.figure).encode("utf-8")
