"""The Plan pages in Debian's Chromium: the short answer first, no horizontal page scroll at 390 and 1,280 px (wide
tables scroll in their own box), the memory parts visible without hover, and a planned recipe's command copied by a
button (the site's own script: the CSP allows no inline script).

Skips when /usr/bin/chromium or playwright is missing (scripts/setup.sh test installs both).
"""

from __future__ import annotations

import pytest
from site_helpers import served
from test_site_browser import CHROMIUM, SCREENSHOTS, Browser, chromium  # noqa: F401  (the fixture, one browser per module)

pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed")]
PAGES = ["plan/gpt-oss-20b.html", "plan/glm-5.2-744b-a40b.html", "plan/qwen3-1.7b.html", "plan/qwen3-8b.html",
         "plan/llama-3.1-70b.html"]
WIDTHS = (390, 1280)


def test_plan_pages_answer_first_and_never_scroll_sideways(chromium, bundled_site):  # noqa: F811
    with served(bundled_site.out) as base:
        b = Browser(chromium, base)
        page = b.page
        for width in WIDTHS:
            page.set_viewport_size({"width": width, "height": 900})
            for path in PAGES:
                page.goto(base + path)
                headings = page.locator("main h2").all_inner_texts()
                assert headings[0] == "Short answer", (path, headings[:2])
                summary = page.locator("#plan-summary").bounding_box()
                first_table = page.locator("section.plan-table").first.bounding_box()
                assert summary["y"] < first_table["y"]
                overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
                assert overflow <= 0, (path, width, overflow)
                assert page.locator("#calibration").is_hidden()  # folded until opened
                # the first screen only: a full-page capture of these long pages outlasts the default timeout
                SCREENSHOTS.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(SCREENSHOTS / f"plan-{path.split('/')[-1].removesuffix('.html')}-{width}.png"),
                                timeout=30000)
        page.goto(base + "plan/qwen3-8b.html#plan-h200-2")  # a link to a folded size opens it
        assert page.locator("#plan-h200-2 td.memory .parts").first.is_visible()
        assert b.errors == [] and b.foreign == [] and b.dialogs == []


def test_copy_as_recipe_copies_the_emit_command(chromium, bundled_site):  # noqa: F811
    with served(bundled_site.out) as base:
        b = Browser(chromium, base)
        page = b.page
        page.goto(base + "plan/qwen3-8b.html")
        page.locator("#plan-h200-2 > details > summary").click()  # the size opens on a click
        row = page.locator("#plan-h200-2 table.plan-rows tbody tr").first
        row.locator("summary", has_text="Copy as recipe").click()
        command = row.locator("pre.code").inner_text()
        assert command.startswith("openrecipes plan qwen3-8b --gpu H200 --gpus 2 --engine torchtitan --global-batch 16 "
                                  "--emit-recipe ")
        button = row.locator("button.copy").get_attribute("data-copy")
        assert b.clipboard_after_click(f"button[data-copy='{button}']") == command
        assert b.errors == []
