"""The public record on the site, on a small fixture catalog (tests/fixtures/site/record-catalog): a board shows the
published runs of its model and GPU type in a table of their own, never ranked; a GPU type with only published runs
gets a record page; every model with a card is on the index; a model page plots its runs by GPU count and type;
recipes.json carries every published run with its source, evidence level and derived figures."""

from __future__ import annotations

import json
import re
from html import unescape

import pytest
from markupsafe import escape
from site_helpers import REPO

from openrecipes.catalog.published import published_figures
from openrecipes.catalog.store import load_catalog
from openrecipes.site.build import build_site

RECORD_CATALOG = REPO / "tests/fixtures/site/record-catalog"
BOARD = "models/gpt-oss-20b/h200/rows8192-gb128-bf16.html"
FIXTURE_RUN = "gpt-oss-20b/h200/record-fixture-mbridge-bf16-64gpu-tp1-pp4-ep8"
RECORD_PAGE = "models/llama-3.1-8b/h100/public-record.html"


@pytest.fixture(scope="module")
def record_site(tmp_path_factory):
    catalog = load_catalog(RECORD_CATALOG)
    return catalog, build_site(catalog, tmp_path_factory.mktemp("record-site") / "site")


def _page(site, path: str) -> str:
    return (site[1].out / path).read_text(encoding="utf-8")


def _table(html: str, table_id: str) -> str:
    match = re.search(rf'<table[^>]*id="{table_id}".*?</table>', html, re.S)
    assert match, table_id
    return match.group(0)


def _rows(table: str) -> list[str]:
    return re.findall(r"<tr id=.*?</tr>", table, re.S)


def test_a_board_shows_its_public_record_in_its_own_table_never_ranked(record_site):
    catalog, _ = record_site
    html = _page(record_site, BOARD)
    leaderboard, record = _table(html, "leaderboard"), _table(html, "record-h200")
    assert FIXTURE_RUN not in leaderboard and "attune-tp1-pp1-ep4" in leaderboard
    [row] = _rows(record)
    assert 'data-evidence="author-reported"' in row and ">author-reported<" in row
    entry = next(e for e in catalog.record if e.slug == FIXTURE_RUN)
    run, derived = entry.entry.published, published_figures(entry.entry, catalog.tables)
    ref = run.reference
    assert f'href="https://github.com/{ref.repository}/blob/{ref.commit}/{ref.path}?plain=1#L{ref.line}"' in row
    assert f"<p>{escape(ref.table)}</p><code>{escape(ref.row)}</code>" in row  # the source's words, escaped
    # The layout as published, the data-parallel size derived: 64 GPUs / (TP1 x PP4 x CP1) = 16.
    assert "TP1 PP4 EP8 DP16" in row and "MBS 1" in row and "GBS 1,280" in row and "seq 4,096" in row
    assert f"{derived.mfu_bf16:.1%}" in row
    assert f"{derived.implied_tflops_per_gpu:,.0f} ours" in row and f"{run.model_tflops_per_gpu:g} published" in row
    # Relabelled to a smaller model, the source's TFLOP/s is 40% above ours: the finding is shown.
    assert f"{derived.tflops_ratio - 1:+.0%}: the source counts FLOPs its own way" in row
    assert "never ranked" in html


def test_without_javascript_every_row_shows_and_the_filters_wait_for_the_script(record_site):
    html = _page(record_site, RECORD_PAGE)
    assert re.search(r'<div class="table-tools record-filters" data-record-filters="record-h100" hidden>', html)
    rows = _rows(_table(html, "record-h100"))
    assert len(rows) == 2 and not any(" hidden" in row.split(">")[0] for row in rows)
    # Options for each filter: the values its rows carry.
    for key, values in (("precision", ["bf16", "fp8-current-scaling"]), ("gpus", ["8"]),
                        ("engine", ["megatron-bridge", "torchtitan"])):
        select = re.search(rf'<select data-record-filter="{key}"[^>]*>(.*?)</select>', html, re.S).group(1)
        assert re.findall(r'<option value="([^"]*)">', select) == ["", *values]
    # Ordered by engine (then GPUs, precision, sequence length), never by speed.
    assert [re.search(r'data-engine="([^"]+)"', row).group(1) for row in rows] == ["megatron-bridge", "torchtitan"]


def test_the_index_lists_every_model_with_a_card_and_links_each_public_record(record_site):
    catalog, _ = record_site
    html = _page(record_site, "index.html")
    models = set(re.findall(r'<(?:tr|li) data-model="([^"]+)"', html))
    assert models == set(catalog.tables.models)
    # published runs only: in their own list, author-reported, never in the leaderboards' columns
    row = re.search(r'<li data-model="llama-3.1-8b" data-gpu="H100">.*?</li>', html, re.S).group(0)
    assert f'href="{RECORD_PAGE}"' in row and "public record: 2 runs" in row and "author-reported" in row
    assert html.index('id="models-table"') < html.index('<li data-model="llama-3.1-8b"')
    board_row = re.search(r'<tr data-model="gpt-oss-20b" data-gpu="H200"[^>]*>.*?</tr>', html, re.S).group(0)
    assert f'href="{BOARD}"' in board_row and "models/gpt-oss-20b/h200/public-record.html" in board_row
    card_only = re.search(r'<li data-model="mixtral-8x7b">.*?</li>', html, re.S)
    assert card_only and "openrecipes plan mixtral-8x7b" in card_only.group(0)
    assert "no recipe yet" not in html[:html.index('id="published-only"')]  # no wall of empty rows on top


def test_a_card_only_model_page_says_what_is_known_and_points_to_the_planner(record_site):
    catalog, _ = record_site
    html = _page(record_site, "models/mixtral-8x7b/index.html")
    card = catalog.tables.models["mixtral-8x7b"]
    assert f"{card.active_params.count:,}" in html and f"{card.total_params:,}" in html
    assert "openrecipes plan mixtral-8x7b" in html and "<svg" not in html


def test_a_model_page_plots_measured_and_published_runs_with_a_table_of_every_point(record_site):
    catalog, _ = record_site
    html = _page(record_site, "models/gpt-oss-20b/index.html")
    assert html.count("<svg") == 1
    links = set(re.findall(r'<a href="([^"]+)" aria-label="[^"]+"', html))
    # Links from models/gpt-oss-20b/: the recipe page and the published run's row on its record page.
    assert {"../../recipes/gpt-oss-20b/h200/attune-tp1-pp1-ep4.html",
            f"../../models/gpt-oss-20b/h200/public-record.html#run-{FIXTURE_RUN.rsplit('/', 1)[1]}"} <= links
    table = _table(html, "scaling-table")
    assert re.findall(r'data-measured="(\w+)"', table) == ["yes", "no"]
    entry = next(e for e in catalog.record if e.slug == FIXTURE_RUN)
    assert f"{published_figures(entry.entry, catalog.tables).mfu_bf16:.1%}" in table
    # the seed recipe is ours to rank but its figures are not re-derived: author-reported, as the published run
    assert table.count('<td class="evidence">author-reported</td>') == 2
    assert "measured (ours)" not in html and "filled markers are re-derived recipes" in html


def test_recipes_json_carries_the_record_with_source_evidence_and_derived_figures(record_site):
    catalog, _ = record_site
    export = json.loads(_page(record_site, "recipes.json"))
    entries = {e["slug"]: e for e in export["entries"]}
    assert {e.slug for e in catalog.record} <= set(entries)
    exported = entries[FIXTURE_RUN]
    assert exported["kind"] == "published_summary" and exported["evidence"] == "author-reported"
    assert "rank" not in exported and all(FIXTURE_RUN not in b["ranked"] for b in export["boards"])
    entry = next(e for e in catalog.record if e.slug == FIXTURE_RUN)
    derived = published_figures(entry.entry, catalog.tables)
    assert exported["public_record"]["derived"]["mfu_bf16"] == derived.mfu_bf16
    assert exported["public_record"]["source_url"].startswith(
        f"https://github.com/{entry.entry.published.reference.repository}/blob/{entry.entry.published.reference.commit}/")
    assert exported["public_record"]["tflops_disagreement"].startswith("published ")
    assert exported["entry"]["published"]["reference"]["line"] == entry.entry.published.reference.line


def test_the_bundled_site_shows_every_published_run_once_and_one_plot_per_model_page(bundled_site):
    catalog = load_catalog(REPO)
    shown: list[str] = []
    for path in bundled_site.pages:
        html = (bundled_site.out / path).read_text(encoding="utf-8")
        if re.search(r"/public-record(-\d+)?\.html$", path):
            shown += [unescape(slug) for slug in re.findall(r'<tr id="run-[^"]+" data-slug="([^"]+)"', html)]
        elif re.fullmatch(r"models/[^/]+/index\.html", path):
            assert html.count("<svg") <= 1, path
    assert sorted(shown) == sorted(e.slug for e in catalog.record)


SWEEP_PAGE = "models/llama-3.1-405b/gb200/public-record.html"


def test_a_record_page_plots_each_weak_scaling_sweep_beside_the_planners_prediction(record_site):
    html = _page(record_site, SWEEP_PAGE)
    [plot] = re.findall(r'<figure class="scaling" id="sweeps-plot">.*?</figure>', html, re.S)
    assert plot.count("<svg") == 1 and "predicted (range)" in plot and "published" in plot
    [sweep] = re.findall(r'<div class="sweep" id="sweep-[^"]+">.*?</table>', html, re.S)
    assert "dgxc-v25.05-llama-3.1-405b-bf16-GB200-tp4pp8cp2vp8" in sweep
    assert "1. llama-3.1-405b, BF16, TP4 PP8 VP8 CP2 on GB200-NVL72-186GB" in sweep
    rows = re.findall(r'<tr><td class="num">(\d+)</td><td class="num">([\d,.]+)</td><td class="num">([^<]*)</td>'
                      r'<td>([^<]*)</td></tr>', sweep)
    assert [(gpus, published) for gpus, published, _, _ in rows] == [("128", "438.22"), ("256", "431.89"),
                                                                     ("512", "430.79")]
    assert all(predicted != "—" and "–" in span for _, _, predicted, span in rows)  # each with its range
    assert "sweep-" not in _page(record_site, RECORD_PAGE)  # a page without a sweep draws none
