"""The site in Debian's Chromium: the address carries a board's, the index's and the public record's filters and
sort, so a shared or reloaded link shows the same rows in the same order; a link to a record row lands on the
row, marked, under its table's header, and on a phone its tokens/s column shows without scrolling sideways; at
1,280 px every table shows every column.

Skips when /usr/bin/chromium or playwright is missing (scripts/setup.sh test installs both).
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
from site_helpers import served
from test_site_browser import CHROMIUM, PAGE_TYPES, Browser, chromium  # noqa: F401  (the fixture, one per module)
from test_site_figure_context import DGXC_8B

pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed")]
BOARD = "models/qwen3-1.7b/h200/rows8192-gb16-bf16.html"
RECORD = "models/llama-3.1-8b/h100/public-record.html"
VISIBLE_SLUGS = "() => Array.from(document.querySelectorAll('#leaderboard tbody tr')).filter(r => !r.hidden)" \
                ".map(r => r.getAttribute('data-slug'))"


def _query(page) -> dict[str, list[str]]:
    return parse_qs(urlsplit(page.url).query)


def test_a_boards_filters_and_sort_survive_in_its_address(chromium, bundled_site):  # noqa: F811
    with served(bundled_site.out) as base:
        b = Browser(chromium, base)
        page = b.page
        page.goto(base + BOARD)
        page.select_option("select[data-evidence-filter=leaderboard]", "re-derived")
        page.fill("input[data-filter=leaderboard]", "compile")
        page.click("#leaderboard th[data-key=usd]")  # the first click: cheapest first
        assert _query(page) == {"evidence": ["re-derived"], "filter": ["compile"], "sort": ["usd-asc"]}
        shown = page.evaluate(VISIBLE_SLUGS)
        assert shown and len(shown) < page.locator("#leaderboard tbody tr").count()
        shared = page.url
        fresh = Browser(chromium, base)
        fresh.page.goto(shared)
        assert fresh.page.input_value("input[data-filter=leaderboard]") == "compile"
        assert fresh.page.input_value("select[data-evidence-filter=leaderboard]") == "re-derived"
        assert fresh.page.get_attribute("#leaderboard th[data-key=usd]", "aria-sort") == "ascending"
        assert fresh.page.evaluate(VISIBLE_SLUGS) == shown
        fresh.page.reload()
        assert fresh.page.evaluate(VISIBLE_SLUGS) == shown
        fresh.page.select_option("select[data-evidence-filter=leaderboard]", "")  # back to any: the key goes
        assert "evidence" not in _query(fresh.page)
        assert b.errors == fresh.errors == [] and b.foreign == []


def test_the_index_and_record_filters_survive_in_the_address(chromium, bundled_site):  # noqa: F811
    with served(bundled_site.out) as base:
        b = Browser(chromium, base)
        page = b.page
        page.goto(base + "index.html")
        page.select_option("[data-index-filter=gpu]", "H200")
        assert _query(page)["board-gpu"] == ["H200"]
        count = page.inner_text("[data-index-count]")
        page.reload()
        assert page.input_value("[data-index-filter=gpu]") == "H200" and page.inner_text("[data-index-count]") == count
        page.goto(base + RECORD)
        page.select_option('select[data-record-filter="precision"]', "fp8")
        counted = page.inner_text("[data-record-count]")
        assert _query(page) == {"precision": ["fp8"]}
        page.goto(page.url)
        assert page.input_value('select[data-record-filter="precision"]') == "fp8"
        assert page.inner_text("[data-record-count]") == counted
        assert b.errors == [] and b.foreign == []


@pytest.mark.parametrize("width", [390, 1280])
def test_a_link_to_a_record_row_lands_on_it_marked_under_its_header(chromium, bundled_site, width):  # noqa: F811
    with served(bundled_site.out) as base:
        b = Browser(chromium, base)
        b.page.set_viewport_size({"width": width, "height": 800})
        anchor = "run-" + DGXC_8B.rsplit("/", 1)[1]
        b.page.goto(base + RECORD + "#" + anchor)
        b.page.wait_for_timeout(100)
        found = b.page.evaluate("""(id) => {
            const row = document.getElementById(id), table = row.closest('table'), box = row.closest('.table-scroll');
            // The header cells stick to the top of the box; the thead element itself stays where it was laid out.
            const cells = Array.from(table.tHead.rows[0].cells).map(c => c.getBoundingClientRect());
            const head = {top: Math.min(...cells.map(c => c.top)), bottom: Math.max(...cells.map(c => c.bottom))};
            const r = row.getBoundingClientRect();
            const tokens = table.tHead.querySelector('th:nth-child(2)').getBoundingClientRect();
            return {target: row.matches(':target'), background: getComputedStyle(row.cells[0]).backgroundColor,
                    headTop: head.top, headBottom: head.bottom, rowTop: r.top, rowBottom: r.bottom,
                    tokensHead: table.tHead.querySelector('th:nth-child(2)').textContent,
                    tokensRight: tokens.right, boxRight: box.getBoundingClientRect().right, left: box.scrollLeft,
                    page: document.documentElement.scrollWidth};
        }""", anchor)
        assert found["target"] and found["background"] not in ("rgba(0, 0, 0, 0)", "rgb(255, 255, 255)")
        assert -1 <= found["headTop"] < found["headBottom"] <= found["rowTop"] + 1, found  # the header, then the row
        assert found["rowBottom"] <= 800, found
        assert found["tokensHead"] == "Tokens/s per GPU"
        assert found["left"] == 0 and found["tokensRight"] <= min(width, found["boxRight"]), found
        assert found["page"] <= width
        assert b.errors == [] and b.foreign == []


def test_every_table_shows_every_column_at_1280_px(chromium, bundled_site):  # noqa: F811
    pages = sorted({*PAGE_TYPES.values(), BOARD, RECORD, "models/qwen3-8b/h200/rows8192-gb16-bf16.html",
                    *(p for p in bundled_site.pages if p.startswith("plan/"))})
    with served(bundled_site.out) as base:
        b = Browser(chromium, base)
        b.page.set_viewport_size({"width": 1280, "height": 800})
        for path in pages:
            b.page.goto(base + path)
            if path.startswith("compare"):
                b.page.wait_for_selector("#compare-figures tbody tr")
            for size in b.page.locator("details.plan-size").all():  # every Plan table laid out, folded or not
                size.evaluate("d => d.open = true")
            clipped = b.page.evaluate("""() => Array.from(document.querySelectorAll('main table'))
                .filter(t => t.offsetParent !== null)
                .map(t => [t.id || t.className, t.closest('.table-scroll') || t.parentElement])
                .filter(([name, box]) => box.scrollWidth > box.clientWidth + 1).map(([name]) => name)""")
            assert clipped == [], path
        assert b.errors == [] and b.foreign == []
