"""The board's evidence filter in Debian's Chromium: choosing a level shows only the rows the audit gave it, and it
combines with the text filter."""

from __future__ import annotations

from pathlib import Path

import pytest
from site_helpers import served

CHROMIUM = Path("/usr/bin/chromium")
sync_api = pytest.importorskip("playwright.sync_api")
pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed")]


def test_the_evidence_filter_keeps_the_rows_of_one_level(bundled_site):
    with served(bundled_site.out) as base, sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                                             args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page()
        errors = []
        page.on("pageerror", lambda error: errors.append(str(error)))  # a script error in the filter
        page.goto(base + "models/qwen3-8b/h200/rows8192-gb16-bf16.html")
        rows = page.locator("#leaderboard tbody tr:visible")
        assert rows.count() == 2 and page.locator("#leaderboard td.evidence").first.inner_text().startswith(
            "re-derived")
        page.select_option("select[data-evidence-filter]", "author-reported")
        assert rows.count() == 0
        page.select_option("select[data-evidence-filter]", "re-derived")
        assert rows.count() == 2
        page.fill("input[data-filter]", "stock")  # both filters apply together
        assert rows.count() == 1 and "FSDP2 stock" in rows.first.inner_text()
        page.select_option("select[data-evidence-filter]", "")
        page.fill("input[data-filter]", "")
        assert rows.count() == 2 and not errors
        browser.close()
