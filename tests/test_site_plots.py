"""Run plots: nothing cut off at the image's edge, and the same input draws the same bytes whatever came before."""

from __future__ import annotations

import io
import re

from openrecipes.site import plots

LONG_NAME = "tuned-tp1-pp1-cp2-dp1-selective-mb1-compile-noreshard-with-a-name-longer-than-the-plot-is-wide"
STEPS = list(range(20))


def _size(svg: bytes | str) -> tuple[float, float]:
    text = svg.decode("utf-8") if isinstance(svg, bytes) else svg
    size = re.search(r'<svg [^>]*width="([\d.]+)pt" height="([\d.]+)pt"', text)
    assert size, text[:300]
    return float(size[1]), float(size[2])


def _step_time() -> bytes:
    return plots.step_time_svg(f"{LONG_NAME}: step time of the measured run", STEPS,
                               [0.25 + 0.001 * (s % 4) for s in STEPS], (5, 19))


def test_a_run_plot_is_cropped_as_matplotlibs_tight_box_so_a_long_title_is_not_cut():
    svg = _step_time()
    tight = io.StringIO()  # the figure still holds the plot just drawn
    plots._run_axes().figure.savefig(tight, format="svg", bbox_inches="tight", metadata={"Date": None})
    assert _size(svg) == _size(tight.getvalue())
    assert _size(svg)[0] > 7.2 * 72  # wider than the figure: the title is inside the image, not clipped


def test_a_run_plot_draws_the_same_bytes_whatever_plot_came_before():
    loss = {arm: (STEPS, [start - 0.3 * s for s in STEPS]) for arm, start in (("candidate", 12.0), ("reference", 12.1))}
    first = plots.loss_svg("a: loss per step", loss)
    _step_time()  # another kind, wider labels and title, shading
    plots.loss_svg("b: loss per step", {"candidate": (STEPS[:5], [1e4, 2e4, 3e4, 4e4, 5e4])})  # one arm, big ticks
    assert plots.loss_svg("a: loss per step", loss) == first
