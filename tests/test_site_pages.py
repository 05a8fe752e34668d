"""Page data of the site: ranking, best per GPU, the Pareto front, and the seeds' number formats."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st
from site_helpers import REPO

from openrecipes.catalog.store import load_catalog
from openrecipes.site import format as fmt
from openrecipes.site.pages import ParetoPoint, pareto_front, relative_url, site_pages


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(REPO)


@pytest.fixture(scope="module")
def site(catalog):
    return site_pages(catalog)


def _board(site, model, gpu):
    return next(p for p in site.section(model).boards if p.board.gpu_type == gpu)


def test_boards_rank_by_tokens_per_gpu_as_the_seeds_do(site):
    gptoss = _board(site, "gpt-oss-20b", "H200")
    assert [e.name for e in gptoss.board.ranked] == ["attune-tp1-pp1-ep4", "attune-tp1-pp2-ep4"]
    glm = _board(site, "GLM-5.2-744B-A40B", "B200")
    assert [e.name for e in glm.board.ranked] == ["attune-tp4-pp2-cp4-mt16k", "attune-tp4-pp2-cp4-mt12k",
                                                  "attune-tp4-pp2-cp8"]
    assert glm.path == "models/glm-5.2-744b-a40b/b200/rows8192-gb128-bf16.html"
    assert site.board_of["gpt-oss-20b/h200/attune-tp1-pp2-ep4"] == (gptoss, 2)


def test_best_per_gpu_lists_summaries_in_the_seeds_gpu_order(site):
    section = site.section("gpt-oss-20b")
    assert [b.gpu_type for b in section.best] == ["H100", "H200", "B200"]
    assert [fmt.tokens_board(b.fastest.entry.result.tokens_per_s_per_gpu) for b in section.best] == \
        ["7,496.7", "10,483.9", "14,536.3"]
    assert [b.summary_only for b in section.best] == [True, False, True]
    assert section.board_for("H100") is None and section.board_for("H200").board.gpu_type == "H200"
    glm = site.section("GLM-5.2-744B-A40B")
    assert [(b.gpu_type, b.fastest.entry.gpu.count, fmt.usd(b.cheapest.entry.result.usd_per_million_tokens))
            for b in glm.best] == [("H100", 256, "$28.00"), ("H200", 128, "$13.58"), ("B200", 64, "$26.95")]


@dataclass(frozen=True)
class _Entry:
    slug: str
    is_summary: bool = False

    @property
    def name(self) -> str:
        return self.slug


def _point(slug, tokens, usd, gpus=8):
    return ParetoPoint(_Entry(slug), tokens, usd, gpus, "H200")


def test_pareto_front_keeps_only_points_nothing_beats_on_both_axes():
    points = [_point("fast-dear", 100, 10), _point("slow-cheap", 50, 1), _point("dominated", 40, 5),
              _point("middle", 80, 4), _point("same-cost-slower", 70, 4), _point("twin", 80, 4)]
    assert [p.entry.slug for p in pareto_front(points)] == ["slow-cheap", "middle", "fast-dear"]
    assert pareto_front([]) == []


def test_pareto_front_of_the_bundled_catalog(site):
    front = site.section("gpt-oss-20b").front
    assert [p.label for p in front] == ["attune-tp1-pp1-ep4", "B200 published summary"]


figures = st.tuples(st.floats(1, 1e5, allow_nan=False), st.floats(0.01, 100, allow_nan=False))


@given(st.lists(figures, max_size=30))
def test_no_point_beats_a_front_point_and_the_front_covers_every_point(values):
    points = [_point(f"r{i}", tokens, usd) for i, (tokens, usd) in enumerate(values)]
    front = pareto_front(points)
    for f in front:
        assert not any(p.tokens_per_s_per_gpu >= f.tokens_per_s_per_gpu and
                       p.usd_per_million_tokens <= f.usd_per_million_tokens and
                       (p.tokens_per_s_per_gpu, p.usd_per_million_tokens) !=
                       (f.tokens_per_s_per_gpu, f.usd_per_million_tokens) for p in points)
    for p in points:
        assert any(f.tokens_per_s_per_gpu >= p.tokens_per_s_per_gpu and
                   f.usd_per_million_tokens <= p.usd_per_million_tokens for f in front)


def test_recipe_figures_are_written_as_the_seed_pages_write_them(catalog):
    glm16 = catalog.find("attune-tp4-pp2-cp4-mt16k").entry
    facts = dict(fmt.recipe_facts(glm16))
    assert facts["Tokens/s per GPU"] == "146.80"
    assert facts["$ / 1M tokens"] == "$26.95"
    assert facts["MFU"] == "1.6% (N = 40,297,758,720 active parameters per token)"
    assert facts["Step-time CV"] == "1.8%"
    assert facts["Convergence check"] == ("correlation 0.999958, final loss difference 7.4e-06, "
                                          "0 pointwise failures over 20 steps")
    assert facts["Measured"] == "2026-10-13"
    assert facts["GPU-hours"] == "48.85"
    assert facts["GPUs"] == "64 x B200 180 GB (AWS p6-b200.48xlarge, 8 per node)"
    assert facts["Rows"] == ("glm52-tulu3-fixed8192-v1 (rows_sha256 "
                             "bb302c134974b96f3905e9c87bfc4c0bb2be674a50e6dad09121aed2a0eb3455)")
    assert facts["Component test"].startswith("optimizer offload fraction 0.9 against on-GPU Adam and an FP64 "
                                              "reference: B200, 2026-10-11. Shape: one GLM-5.2-744B-A40B MoE layer")
    glm12 = dict(fmt.recipe_facts(catalog.find("attune-tp4-pp2-cp4-mt12k").entry))
    assert glm12["Measured"] == "2026-10-11, 14-step run scored over steps 4–13"
    assert glm12["Convergence check"].startswith("correlation 0.9998, final loss difference 0.00051,")
    gptoss = dict(fmt.recipe_facts(catalog.find("attune-tp1-pp1-ep4").entry))
    assert (gptoss["Tokens/s per GPU"], gptoss["Step-time CV"], gptoss["GPU-hours"]) == ("10,483.91", "1.71%", "0.94")
    assert gptoss["MFU"] == "22.9% (N = 3,607,142,400 active parameters per token)"
    assert ("megatron lm", "commit 1dcf0daf (megatron-core 0.16.0rc0) with the training image's local changes") \
        in fmt.stack_items(catalog.find("attune-tp1-pp1-ep4").entry)


def test_links_are_relative_so_the_site_works_from_file_urls():
    assert relative_url("index.html", "static/site.css") == "static/site.css"
    assert relative_url("recipes/a/b/c.html", "compare.html") == "../../../compare.html"
    assert relative_url("models/m/g/w.html", "recipes/m/g/r.html") == "../../../recipes/m/g/r.html"


def test_costs_that_tie_at_two_decimals_get_the_digits_that_rank_them(site):
    assert fmt.usd_ranked([(0.05, 0.054257), (0.05, 0.053032), (0.09, 0.091977)]) == ["$0.0543", "$0.0530", "$0.09"]
    assert fmt.usd_ranked([(26.95, 26.951), (26.97, 26.97)]) == ["$26.95", "$26.97"]  # no tie: as published
    assert fmt.usd_ranked([(0.21, 0.21), (0.21, 0.21)]) == ["$0.21", "$0.21"]  # equal figures stay equal
    texts = {slug: text for slug, text in site.usd_texts.items() if slug.startswith("qwen3-1.7b/")}
    assert texts == {"qwen3-1.7b/h200/openrecipes-compile-noac-mb4": "$0.05",
                     "qwen3-1.7b/h200/torchtitan-stock": "$0.09"}
    assert site.usd_text(site.catalog.find("attune-tp1-pp1-ep4")) == "$0.21"  # seed figures as published
    best = site.section("qwen3-1.7b").best[0]
    assert best.cheapest.name == "openrecipes-compile-noac-mb4"


def test_every_plotted_point_is_numbered_fastest_first(site):
    points = site.section("GLM-5.2-744B-A40B").points
    assert [p.number for p in points] == [1, 2, 3, 4, 5]
    assert [p.label for p in points][:3] == ["H200 published summary", "attune-tp4-pp2-cp4-mt16k",
                                             "attune-tp4-pp2-cp4-mt12k"]


def test_board_running_pages_have_their_own_paths(site):
    board = _board(site, "qwen3-1.7b", "H200")
    assert board.running_path == "models/qwen3-1.7b/h200/rows8192-gb16-bf16-running.html"


def test_twin_points_get_separate_numbers_each_a_link():
    import re

    from openrecipes.site.plots import pareto_svg

    points = [ParetoPoint(_Entry(slug), 146.8, 26.95, 64, "B200", number)
              for number, slug in enumerate(["twin-a", "twin-b", "other"], start=1)]
    points[2] = ParetoPoint(_Entry("other"), 136.5, 28.99, 64, "B200", 3)
    svg = pareto_svg(points, pareto_front(points), {p.number: (f"r/{p.entry.slug}.html", p.entry.slug)
                                                    for p in points}, "plot-test")
    assert "<style" not in svg and " style=" not in svg and "<?xml" not in svg
    labels = dict(re.findall(r'<a href="r/([\w-]+)\.html" aria-label="[\w-]+">\s*<text[^>]*x="([\d.]+)"', svg))
    positions = {slug: float(x) for slug, x in labels.items()}
    assert set(positions) == {"twin-a", "twin-b", "other"}
    assert abs(positions["twin-a"] - positions["twin-b"]) > 8  # side by side, not on top of each other


def test_the_numbers_of_a_crowded_plot_do_not_cover_each_other():
    import re

    from openrecipes.site.plots import _label_box, _overlaps, pareto_svg

    # 30 clusters of 4 near-twin recipes: each number must find a free place around its cluster.
    points = [ParetoPoint(_Entry(f"r{n}"), 1000 + 100 * (n // 4 % 6) + n % 4, 1.0 + 0.1 * (n // 24) + 0.001 * (n % 4),
                          8, "H200", n + 1) for n in range(120)]
    svg = pareto_svg(points, pareto_front(points), {p.number: (f"r/{p.entry.slug}.html", p.entry.slug)
                                                    for p in points}, "plot-test")
    label = r'<a href="r/[\w-]+\.html" aria-label="[\w-]+">\s*<text[^>]*x="([\d.]+)" y="([\d.]+)"[^>]*>(\d+)<'
    labels = re.findall(label, svg)
    assert len(labels) == len(points)
    # Written to a tenth of a point: each box shrunk by that much.
    boxes = [(x0 + 0.1, y0 + 0.1, x1 - 0.1, y1 - 0.1)
             for x0, y0, x1, y1 in (_label_box(float(x), float(y), text) for x, y, text in labels)]
    assert not [(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:] if _overlaps(a, b)]


def test_a_model_of_many_runs_shares_its_plots_and_keys_each_page_its_own_points():
    """Past INLINE_PLOT_POINTS a model's plots are files of their own: a board keys its own rows, the index the front,
    and the model page's table holds one row per GPU type, count, precision and evidence level."""
    from openrecipes.site.pages import INLINE_PLOT_POINTS, ModelSection, ParetoPoint
    from openrecipes.site.record import ScalingPoint

    entries = [_Entry(f"m/h200/r{i}") for i in range(INLINE_PLOT_POINTS + 1)]
    points = [ParetoPoint(e, 100.0 + i, 1.0 + i, 8, "H200", i + 1) for i, e in enumerate(entries)]
    section = ModelSection("m", "f", "m", [], "", None, points=points, front=points[:1],
                           scaling=[ScalingPoint(e, "H200", 8 if i % 2 else 16, "bf16", "torchtitan", 100.0 + i, None,
                                                 True, "x.html") for i, e in enumerate(entries)])
    assert section.pareto_shared and section.scaling_shared
    assert section.key_points() == points[:1]  # the index: the front
    assert section.key_points(entries[:3]) == points[:3]  # a board page: its own rows
    rows = section.scaling_rows
    assert sorted((point.gpus, runs) for point, runs in rows) == [(8, INLINE_PLOT_POINTS // 2),
                                                                   (16, INLINE_PLOT_POINTS // 2 + 1)]
    fastest = {gpus: max(p.tokens_per_s_per_gpu for p in section.scaling if p.gpus == gpus) for gpus in (8, 16)}
    assert all(point.tokens_per_s_per_gpu == fastest[point.gpus] for point, _ in rows)
    small = ModelSection("m", "f", "m", [], "", None, points=points[:5], front=points[:1])
    assert not small.pareto_shared and small.key_points() == points[:5]
