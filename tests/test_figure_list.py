"""One list of figures (figures.FIGURES): every table a user reads iterates it, so a figure added to the list shows in
`list --json`, `show`, the boards' CSV and the compare page, and time to train a token budget is such an entry."""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import replace

import pytest
from conftest import REPO, openrecipes

from openrecipes import figures
from openrecipes.catalog import facts
from openrecipes.catalog.cli import shown_values
from openrecipes.catalog.entry_figures import inputs_of, value_of
from openrecipes.catalog.leaderboard import leaderboards_view, selection
from openrecipes.catalog.store import load_catalog
from openrecipes.site.evidence_files import board_csv

OURS_8B = "qwen3-8b/h200/torchtitan-stock-fsdp2"
# A figure declared only here, as a contributor would add one: GPU-hours to train the token budget.
GPU_HOURS_TO_TRAIN = figures.FigureSpec(
    "gpu_hours_to_train", "GPU-hours to train", "GPU-hours", 1, -1, ("token_budget", "tokens_per_s_per_gpu"),
    lambda tokens, speed: tokens / speed / 3600, "token budget / tokens/s per GPU / 3600", lambda v: f"{v:,.1f}",
    stored=False)


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(REPO)


@pytest.fixture
def one_more_figure(monkeypatch):
    monkeypatch.setattr(figures, "FIGURES", (*figures.FIGURES, GPU_HOURS_TO_TRAIN))


def _csv_rows(catalog) -> list[dict[str, str]]:
    entries = catalog.recipes[:3]
    data = board_csv([(rank, e, "re-derived", e.entry.result.usd_per_million_tokens, f"recipes/{e.slug}.html")
                      for rank, e in enumerate(entries, start=1)])
    return list(csv.DictReader(io.StringIO(data.decode())))


def test_list_json_and_show_give_the_time_to_train_a_billion_tokens():
    listed = json.loads(openrecipes("list", "--json").stdout)
    rows = [r for b in listed["boards"] for r in b["recipes"]] + listed["summaries"]
    assert rows
    for row in rows:
        hours = figures.time_to_train_hours(1e9, row["tokens_per_s_per_gpu"], row["gpus"])
        assert row["time_to_train_hours"] == round(hours, 2), row["slug"]
    ours = next(r for r in rows if r["slug"] == OURS_8B)
    shown = openrecipes("show", OURS_8B).stdout
    hours = re.escape(figures.duration_text(ours["time_to_train_hours"]))
    assert re.search(rf"Time to train 1B tokens *│ {hours}", shown)
    as_json = json.loads(openrecipes("show", OURS_8B, "--json").stdout)
    assert as_json["token_budget"] == 1_000_000_000
    assert list(as_json["figures"]) == [f.name for f in figures.shown_on("show")]
    assert as_json["figures"]["time_to_train_hours"] == ours["time_to_train_hours"]
    assert as_json["figures"]["mfu"] == as_json["recipe"]["result"]["mfu"]


def test_the_csv_header_is_the_list_of_figures_and_each_cell_its_value(catalog):
    rows = _csv_rows(catalog)
    exported = [f.name for f in figures.FIGURES if "csv" in f.shown]
    assert list(rows[0])[7:-3] == exported
    assert "time_to_train_hours" in exported and "step_time_cv_percent" not in exported
    for row, entry in zip(rows, catalog.recipes, strict=False):
        speed, gpus = entry.entry.result.tokens_per_s_per_gpu, entry.entry.gpu.count
        assert float(row["time_to_train_hours"]) == round(figures.time_to_train_hours(1e9, speed, gpus), 2)
        assert float(row["mfu"]) == entry.entry.result.mfu


def test_a_figure_added_to_the_list_shows_in_list_json_show_and_the_csv(catalog, one_more_figure):
    view = leaderboards_view(catalog, selection(catalog, None, None, None)).as_json()
    row = view["boards"][0]["recipes"][0]
    assert list(row)[5:9] == ["tokens_per_s_per_gpu", "usd_per_million_tokens", "time_to_train_hours",
                              "gpu_hours_to_train"]  # in the list's order, where the figures stand
    entry = catalog.find(row["slug"])
    assert row["gpu_hours_to_train"] == round(1e9 / entry.entry.result.tokens_per_s_per_gpu / 3600, 1)
    shown = dict(facts.recipe_facts(entry.entry))
    assert shown["GPU-hours to train 1B tokens"] == f"{1e9 / entry.entry.result.tokens_per_s_per_gpu / 3600:,.1f}"
    assert "gpu_hours_to_train" in _csv_rows(catalog)[0]
    assert shown_values(entry.entry)["gpu_hours_to_train"] == row["gpu_hours_to_train"]  # show --json's figures


def test_a_token_budget_scales_the_time_to_train_on_a_recipe_page(catalog):
    recipe = catalog.find(OURS_8B).entry
    one, four = (dict(facts.recipe_facts(recipe, token_budget=b)) for b in (1_000_000_000, 4_000_000_000))
    hours = figures.time_to_train_hours(1e9, recipe.result.tokens_per_s_per_gpu, recipe.gpu.count)
    assert one["Time to train 1B tokens"] == figures.duration_text(hours)
    assert four["Time to train 4B tokens"] == figures.duration_text(4 * hours)


def test_a_cost_ranks_at_full_precision_only_where_it_rounds_to_the_published_one(catalog):
    usd = figures.figure("usd_per_million_tokens")
    recipe = catalog.find(OURS_8B).entry
    published = recipe.result.usd_per_million_tokens
    full = value_of(usd, recipe, catalog.tables)
    assert full != published and round(full, 2) == published
    assert full == usd.of(inputs_of(recipe, catalog.tables))
    assert value_of(usd, recipe, None) == published  # unpriced: the published figure
    wrong = recipe.model_copy(update={"result": recipe.result.model_copy(update={"usd_per_million_tokens": 9.99})})
    assert value_of(usd, wrong, catalog.tables) == 9.99  # a figure that does not agree is kept as published


def test_validate_recomputes_each_stored_figure_from_the_list(catalog, tmp_path):
    source = REPO / "recipes" / f"{OURS_8B}.yaml"
    text = source.read_text()
    mfu = f"{catalog.find(OURS_8B).entry.result.mfu}"
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace(f"mfu: {mfu}", "mfu: 0.5"))
    done = openrecipes("validate", bad, "--catalog", REPO, "--json")
    errors = [e for r in json.loads(done.stdout) for e in r["errors"] + r.get("findings", [])]
    assert done.returncode == 1
    assert any(e["field"] == "result.mfu" and "6 * N * tokens/s/GPU / peak" in e["message"] for e in errors)


def test_a_figure_naming_an_unknown_input_is_refused_where_it_is_declared():
    with pytest.raises(ValueError, match="unknown inputs"):
        replace(GPU_HOURS_TO_TRAIN, inputs=("token_budget", "tokens_per_second"))


def test_a_figure_added_to_the_list_is_a_column_of_every_board(one_more_figure, tmp_path):
    """The board's figure columns are the list's: a new figure worked out for the token budget gets its header, its
    sort key and a cell in every row, after the recipe's own columns."""
    from openrecipes.site.build import BuildReport, _Writer
    from openrecipes.site.pages import site_pages

    site = site_pages(load_catalog(REPO))
    section = site.section("qwen3-8b")
    board_page = section.boards[0]
    _Writer(tmp_path, BuildReport(tmp_path)).page(board_page.path, "board.html", site=site, section=section,
                                                 page=board_page, title=board_page.title)
    html = (tmp_path / board_page.path).read_text(encoding="utf-8")
    header = html[html.index('<table class="data sortable" id="leaderboard"'):html.index("</thead>")]
    keys = re.findall(r'data-key="([a-z_]+)"', header)
    assert keys[:3] == ["rank", "tokens", "usd"] and keys[-4:] == ["evidence", "time", "gpu_hours_to_train", "cost"]
    assert 'data-key="gpu_hours_to_train">GPU-hours to train <span data-budget-text>1B</span> tokens' in header
    for entry in board_page.rows:
        row = html[html.index(f'<tr data-slug="{entry.slug}"'):]
        cell = re.search(r'<td class="num gpu_hours_to_train narrow-hide" data-value="([^"]*)">([^<]*)</td>',
                         row[:row.index("</tr>")])
        hours = 1e9 / entry.entry.result.tokens_per_s_per_gpu / 3600
        assert cell is not None and cell.group(2) == f"{hours:,.1f}" and float(cell.group(1)) == float(f"{hours:.4g}")
