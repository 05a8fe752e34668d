"""The built site in Debian's Chromium, served over http from 127.0.0.1: Plan pages readable at both widths (no word
broken across lines in a table at 1,280 px, no page taller than 15,000 px at 390 px), and the home page answering
"model on N x GPU" for every model, each answer line labelled with one of the evidence words.

Skips when /usr/bin/chromium or playwright is missing (scripts/setup.sh test installs both).
"""

from __future__ import annotations

import pytest
from site_helpers import served
from test_site_browser import CHROMIUM, Browser, chromium  # noqa: F401  (the fixture, one browser per module)
from test_site_crawl import VOCABULARY

pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed")]
MAX_PHONE_HEIGHT = 15000

# The words of every visible table cell that the browser laid out over more than one line. A word is what lies
# between spaces and hyphens: "Held-out" may wrap after its hyphen, as print does, but no letter of "recompute"
# may leave its line.
BROKEN_WORDS = """() => {
  const broken = [];
  for (const cell of document.querySelectorAll('main th, main td')) {
    if (!cell.getClientRects().length) continue;
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      if (!node.parentElement.getClientRects().length) continue;
      for (const match of node.data.matchAll(/[^\\s\\u002d\\u2013]+/g)) {
        const range = document.createRange();
        range.setStart(node, match.index);
        range.setEnd(node, match.index + match[0].length);
        const lines = new Set(Array.from(range.getClientRects()).filter(r => r.width > 0).map(r => Math.round(r.top)));
        if (lines.size > 1) broken.push(match[0]);
      }
    }
  }
  return broken;
}"""


def test_plan_pages_break_no_word_and_stay_short_on_a_phone(chromium, bundled_site):  # noqa: F811
    plans = sorted(page for page in bundled_site.pages if page.startswith("plan/"))
    assert plans
    with served(bundled_site.out) as base:
        b = Browser(chromium, base)
        for path in plans:
            b.page.set_viewport_size({"width": 1280, "height": 900})
            b.page.goto(base + path)
            for size in b.page.locator("details.plan-size").all():  # every table laid out, folded or not
                size.evaluate("d => d.open = true")
            assert b.page.evaluate(BROKEN_WORDS) == [], path
            b.page.set_viewport_size({"width": 390, "height": 900})
            b.page.goto(base + path)
            height = b.page.evaluate("document.documentElement.scrollHeight")
            assert height <= MAX_PHONE_HEIGHT, (path, height)
        assert b.errors == [] and b.foreign == []


def test_the_home_page_answers_for_every_model(chromium, bundled_site):  # noqa: F811
    with served(bundled_site.out) as base:
        b = Browser(chromium, base)
        page = b.page
        page.goto(base + "index.html")
        models = page.locator("#ask-model option").evaluate_all("os => os.map(o => o.value)")
        assert len(models) == len([p for p in bundled_site.pages if p.startswith("plan/")])  # every model
        for model in models:
            page.select_option("#ask-model", model)
            answer = page.locator("#answer")
            assert answer.locator(".answer-question").inner_text().startswith(model)
            lines = answer.locator(".answer-line")
            if lines.count() == 0:  # nothing measured or published here: the answer says why nothing is offered
                assert answer.locator(".answer-none").count() > 0
                continue
            for head in lines.locator(".answer-head").all_inner_texts():
                assert head.split("(")[1].split(")")[0] in VOCABULARY, (model, head)
            for href in lines.locator("a").evaluate_all("as => as.map(a => a.href)"):
                assert page.request.get(href.split("#")[0]).ok, href
        # measured first: gpt-oss-20b on 8 x H200 is a recipe, then the public record and the planner
        page.select_option("#ask-model", "gpt-oss-20b")
        page.select_option("#ask-gpu", "H200")
        page.select_option("#ask-gpus", "8")
        kinds = page.locator("#answer .answer-line").evaluate_all("ls => ls.map(l => l.className)")
        assert kinds[0] == "answer-line kind-measured"
        assert "10,484 tokens/s per GPU" in page.locator("#answer .kind-measured").first.inner_text()
        assert b.errors == [] and b.foreign == []


def test_the_index_filters_boards_by_gpu_type_and_count(chromium, bundled_site):  # noqa: F811
    with served(bundled_site.out) as base:
        b = Browser(chromium, base)
        page = b.page
        page.goto(base + "index.html")
        page.select_option("[data-index-filter=gpu]", "B200")
        shown = page.locator("#models-table tbody tr:visible")
        assert shown.count() >= 1
        assert set(shown.evaluate_all("rs => rs.map(r => r.dataset.gpu)")) == {"B200"}
        page.select_option("[data-index-filter=gpu]", "")
        page.select_option("[data-index-filter=gpus]", "2")
        assert all(" 2 " in g for g in shown.evaluate_all("rs => rs.map(r => r.dataset.gpus)"))
        assert b.errors == []


def test_a_new_token_budget_scales_every_time_and_cost(chromium, bundled_site):  # noqa: F811
    with served(bundled_site.out) as base:
        b = Browser(chromium, base)
        page = b.page
        page.goto(base + "models/qwen3-8b/h200/rows8192-gb16-bf16.html")
        cell = page.locator("#leaderboard td.time").first
        hours = float(cell.get_attribute("data-train-hours"))
        page.fill("[data-budget-input]", "2")
        assert page.locator("[data-budget-text]").first.inner_text() == "2B"
        assert float(cell.get_attribute("data-value")) == pytest.approx(2 * hours, rel=1e-6)
        assert cell.inner_text() == (f"{2 * hours:,.1f} h" if 2 * hours < 48 else f"{2 * hours / 24:,.1f} days")
        assert b.errors == []
