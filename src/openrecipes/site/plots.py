"""The site's plots as self-contained SVG (text drawn as paths, no fonts or scripts to fetch).

The SVGs are loaded as <img>, so nothing in them can run in the page, and they carry no date or random ids:
the same catalog draws the same bytes.
"""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("svg")

import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)

from openrecipes.site.pages import ParetoPoint  # noqa: E402

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
# Name the recipes on the front only while the labels still fit beside each other.
MAX_FRONT_LABELS = 10


def plain(text: str) -> str:
    """Text drawn as written: matplotlib would read "$...$" in a recipe name as mathematics."""
    return text.replace("$", r"\$")


def _svg(figure) -> bytes:
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(figure)
    return buffer.getvalue().encode("utf-8")


def _marker_area(gpus: int) -> float:
    return MARKER_AREA_PER_SQRT_GPU * gpus ** 0.5


def pareto_svg(model: str, points: list[ParetoPoint], front: list[ParetoPoint]) -> bytes:
    """Tokens/s per GPU against $ per 1M tokens, one colour per GPU type, area by GPU count; summaries hollow."""
    figure, axes = plt.subplots(figsize=(7.2, 3.9))
    gpu_types = sorted({p.gpu_type for p in points})
    for colour, gpu_type in zip(GPU_COLOURS * 4, gpu_types):
        for summary in (False, True):
            group = [p for p in points if p.gpu_type == gpu_type and p.entry.is_summary == summary]
            if not group:
                continue
            axes.scatter([p.usd_per_million_tokens for p in group], [p.tokens_per_s_per_gpu for p in group],
                         s=[_marker_area(p.gpus) for p in group], alpha=0.75, linewidths=1.2,
                         facecolors="none" if summary else colour, edgecolors=colour,
                         label=plain(f"{gpu_type}{' (published summary)' if summary else ''}"))
    axes.plot([p.usd_per_million_tokens for p in front], [p.tokens_per_s_per_gpu for p in front],
              color="#1a202c", linewidth=1, linestyle="--", label="Pareto front", zorder=1)
    if len(front) <= MAX_FRONT_LABELS:
        for point in front:
            axes.annotate(plain(point.label), (point.usd_per_million_tokens, point.tokens_per_s_per_gpu),
                          textcoords="offset points", xytext=(6, 4), fontsize=7, color="#2d3748")
    costs = [p.usd_per_million_tokens for p in points]
    if max(costs) / min(costs) > 20:
        axes.set_xscale("log")
    axes.set_xlabel("$ per 1M tokens (lower is better)")
    axes.set_ylabel("tokens/s per GPU (higher is better)")
    axes.set_title(f"{plain(model)}: speed against cost; marker area grows with GPU count", loc="left", fontsize=10)
    axes.legend(fontsize=7, frameon=False, loc="best", markerscale=0.6)
    return _svg(figure)


def loss_svg(title: str, curves: dict[str, tuple[list[int], list[float]]]) -> bytes:
    """Loss per step of each arm (candidate, reference) on one axis."""
    figure, axes = plt.subplots(figsize=(7.2, 3.2))
    # Arms that agree overlap exactly: the later arm is drawn dashed with hollow markers so both stay visible.
    for i, ((label, (steps, losses)), colour) in enumerate(zip(curves.items(), GPU_COLOURS)):
        axes.plot(steps, losses, marker="o", markersize=5 - 2 * i, linewidth=1.2, color=colour, label=label,
                  linestyle="-" if i == 0 else "--", markerfacecolor=colour if i == 0 else "none")
    axes.set_xlabel("step (from 0)")
    axes.set_ylabel("loss")
    axes.set_title(plain(title), loc="left", fontsize=10)
    axes.legend(fontsize=8, frameon=False)
    return _svg(figure)


def step_time_svg(title: str, steps: list[int], seconds: list[float], window: tuple[int, int]) -> bytes:
    """Step times of the measured run, the scored window shaded."""
    figure, axes = plt.subplots(figsize=(7.2, 3.2))
    axes.axvspan(window[0] - 0.5, window[1] + 0.5, color="#ebf4ff", label=f"scored window {window[0]}–{window[1]}")
    axes.plot(steps, seconds, marker="o", markersize=3, linewidth=1.2, color=GPU_COLOURS[0], label="step time")
    axes.set_xlabel("step (from 0)")
    axes.set_ylabel("seconds")
    axes.set_title(plain(title), loc="left", fontsize=10)
    axes.legend(fontsize=8, frameon=False)
    return _svg(figure)
