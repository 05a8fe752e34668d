"""The public record in Debian's Chromium, on the small fixture catalog: its filters (precision, GPU count, engine)
appear with the site's script and narrow the rows; a board with both keeps its leaderboard and record apart; no page
scrolls sideways at 390 or 1,280 px (the wide record table scrolls in its own box); axe finds nothing serious.

Skips when /usr/bin/chromium or playwright is missing (scripts/setup.sh test installs both).
"""

from __future__ import annotations

import pytest
from site_helpers import served
from test_site_browser import AXE, CHROMIUM, Browser, chromium  # noqa: F401  (the fixture, one browser per module)
from test_site_record import BOARD, RECORD_PAGE, record_site  # noqa: F401  (the fixture, built once per module)

pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed")]
PAGES = [BOARD, RECORD_PAGE, "models/gpt-oss-20b/index.html", "models/mixtral-8x7b/index.html", "index.html",
         "models/llama-3.1-405b/gb200/public-record.html"]  # a record page with a weak-scaling sweep


def test_the_filters_narrow_the_public_record_and_count_what_shows(chromium, record_site):  # noqa: F811
    with served(record_site[1].out) as base:
        b = Browser(chromium, base)
        page = b.page
        page.goto(base + RECORD_PAGE)
        rows = page.locator("#record-h100 tbody tr")
        assert page.locator("[data-record-filters]").is_visible() and rows.count() == 2
        assert page.locator("[data-record-count]").inner_text() == "2 of 2 runs shown"
        page.select_option('select[data-record-filter="precision"]', "bf16")
        assert [r.get_attribute("data-engine") for r in rows.all() if r.is_visible()] == ["torchtitan"]
        page.select_option('select[data-record-filter="engine"]', "megatron-bridge")
        assert not any(r.is_visible() for r in rows.all())
        assert page.locator("[data-record-count]").inner_text() == "0 of 2 runs shown"
        page.select_option('select[data-record-filter="precision"]', "")
        assert [r.get_attribute("data-precision") for r in rows.all() if r.is_visible()] == ["fp8-current-scaling"]
        assert b.errors == [] and b.foreign == []


def test_record_pages_fit_the_window_and_have_no_serious_accessibility_violation(chromium, record_site):  # noqa: F811
    with served(record_site[1].out) as base:
        b = Browser(chromium, base)
        for width in (390, 1280):
            b.page.set_viewport_size({"width": width, "height": 900})
            for path in PAGES:
                b.page.goto(base + path)
                overflow = b.page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
                assert overflow <= 0, (path, width, overflow)
                b.screenshot(f"record-{path.replace('/', '-').removesuffix('.html')}-{width}")
        assert b.errors == [] and b.foreign == []
        # axe is injected for the test only: this context lets its script in past the pages' CSP.
        context = chromium.new_context(viewport={"width": 390, "height": 900}, bypass_csp=True)
        page = context.new_page()
        for path in PAGES:
            page.goto(base + path)
            page.add_script_tag(path=str(AXE))
            result = page.evaluate("() => axe.run(document, {resultTypes: ['violations']})")
            serious = [(v["id"], [n["target"] for n in v["nodes"]][:3]) for v in result["violations"]
                       if v["impact"] in ("serious", "critical")]
            assert serious == [], path
        context.close()
