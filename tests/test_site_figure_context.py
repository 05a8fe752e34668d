"""Every figure on the site stands with what a reader needs to read it: its precision, its source's caveats, why our
MFU differs from the published one, what workload our boards measured (beside published runs at large global
batches), and on Plan pages the precision the planner predicted in and the published entry of that precision."""

from __future__ import annotations

import re
from html import unescape

import pytest
from site_helpers import REPO
from test_site_record import BOARD, record_site  # noqa: F401  (the fixture, built once per module)

from openrecipes.catalog.store import load_catalog
from openrecipes.site.plan import precision_family, read_plan

FORCE_BALANCE = "we force-balance the token distribution among experts"
DGXC_8B = "llama-3.1-8b/h100/record-dgxc-v25.04-bf16-16gpu-cp2-gbs256"


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(REPO)


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html)))


def _row(html: str, slug: str) -> str:
    match = re.search(rf'<tr id="[^"]*" data-slug="{re.escape(slug)}".*?</tr>', html, re.S)
    assert match, slug
    return match.group(0)


def _page(site, path: str) -> str:
    return (site.out / path).read_text(encoding="utf-8")


def test_a_record_row_quotes_its_sources_caveat_and_names_each_figures_precision(bundled_site, catalog):
    moe = [e for e in catalog.record if FORCE_BALANCE in e.entry.note and e.entry.gpu.type == "GB200"
           and e.entry.model == "deepseek-v3"]
    assert moe
    html = _page(bundled_site, "models/deepseek-v3/gb200/public-record.html")
    for entry in moe:
        row = _text(_row(html, entry.slug))
        assert f"The source: “In MoE training benchmarks, {FORCE_BALANCE}" in row, entry.slug
        assert f"in {entry.entry.published.precision.upper()}" in row  # the tokens/s cell names its precision


def test_a_published_mfu_that_differs_from_ours_says_why(bundled_site):
    row = _text(_row(_page(bundled_site, "models/llama-3.1-8b/h100/public-record.html"), DGXC_8B))
    assert "62.3% published against ours 55.5% of the BF16 peak: the source counts a token's FLOPs its own way" in row


def test_board_words_say_what_our_runs_measured_from_the_recipes_own_fields(bundled_site, catalog):
    from openrecipes.site.workload import workload_words

    recipes = [e.entry for e in catalog.recipes if e.entry.model == "qwen3-8b" and e.entry.gpu.type == "H200"]
    words = _text(_page(bundled_site, "models/qwen3-8b/h200/rows8192-gb16-bf16.html"))
    steps, batch = recipes[0].result.steps_per_run, recipes[0].workload.global_batch
    assert (f"What these recipes measured: {steps}-step runs from random weights on {recipes[0].workload.dataset.name}"
            f", 8,192-token rows at global batch {batch}.") in words
    # The words follow the fields: other steps and batches, other words; a slime recipe claims no random weights.
    changed = [r.model_copy(update={"result": r.result.model_copy(update={"steps_per_run": 50})}) for r in recipes[:1]]
    assert workload_words(changed + recipes[1:]).startswith(f"{steps}–50-step runs from random weights")
    # The model page plots our runs beside published ones: it says what each of ours measured, and the record's batches.
    model = _text(_page(bundled_site, "models/llama-3.1-8b/index.html"))
    ours = [e.entry for e in catalog.recipes if e.entry.model == "llama-3.1-8b"]
    batches = [e.entry.published.global_batch for e in catalog.record if e.entry.model == "llama-3.1-8b"
               and e.entry.published and e.entry.published.global_batch]
    assert f": {workload_words(ours)}." in model
    assert f"The published runs: global batch {min(batches):,}–{max(batches):,}" in model
    slime = [e.entry for e in catalog.recipes if e.entry.model == "gpt-oss-20b"]
    assert "random weights" not in workload_words(slime) and "global batch 128" in workload_words(slime)


def test_published_runs_at_another_global_batch_say_the_board_is_another_workload(record_site):  # noqa: F811
    html = _text((record_site[1].out / BOARD).read_text(encoding="utf-8"))
    assert "Not the leaderboard's workload: these runs were published at global batch 1,280" in html
    assert ("the leaderboard above ranks 20-step runs on Tulu 3 SFT mixture, 8,192-token rows at global batch 128"
            in html)


def test_the_predicted_column_names_the_precision_of_its_predictions(bundled_site):
    html = _page(bundled_site, "plan/llama-3.1-70b.html")
    for table in re.findall(r'<table class="data published-points.*?</table>', html, re.S):
        header = re.search(r"Predicted \(([^)]*)\) and range", unescape(table)).group(1)
        families = {precision_family(p) for p, predicted in re.findall(
            r'<td class="precision"><span class="nowrap">([^<]+)</span>.*?<td class="num range">(.)', table, re.S)
            if predicted != "—"}
        assert header == (families.pop() if len(families) == 1 else "in each entry's precision"), families
    assert "Predicted (BF16) and range" not in html  # every entry near these sizes with a prediction is FP8


def test_nearest_published_prefers_the_predictions_precision_at_the_same_count(bundled_site):
    from openrecipes.site.plan import nearest_published

    table = next(t for t in read_plan(REPO, "llama-3.1-8b").tables if (t.gpu_type, t.gpus) == ("H100", 8))
    assert table.published[0].precision != "bf16"  # the export's nearest is FP8, a BF16 one at 8 x H100 exists
    assert nearest_published(table, "BF16").precision == "bf16"
    html = _page(bundled_site, "plan/llama-3.1-8b.html")
    answer = re.search(r'<tr data-gpu="H100" data-gpus="8">.*?</tr>', html, re.S).group(0)
    nearest = _text(re.search(r'class="published-nearest">.*?</td>', answer, re.S).group(0))
    assert "8 × H100 · bf16" in nearest and "not the predicted" not in nearest
