"""A site built from a catalog whose reproductions are an HTML page, an .htm page, an XHTML page, an SVG image and a
script (each holding a real run's step lines in a comment, and a payload), loaded in Debian's Chromium from
`openrecipes serve` and from a plain static server (`python -m http.server`): every evidence link opens as text, no
payload runs, the site's own scripts still do."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
from evidence_helpers import OURS, attacker_catalog
from site_helpers import served

from openrecipes.catalog.store import load_catalog
from openrecipes.site.build import build_site

CHROMIUM = Path("/usr/bin/chromium")
sync_api = pytest.importorskip("playwright.sync_api")
pytestmark = [pytest.mark.browser, pytest.mark.slow,
              pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed")]
STOCK_SLUG = "qwen3-8b/h200/torchtitan-stock-fsdp2"
OURS_SLUG = "qwen3-8b/h200/openrecipes-fsdp2-compile-noac-mb1"


@contextmanager
def static_server(root: Path):
    """`python -m http.server` on a free loopback port: a static host that sends no CSP and no nosniff."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
                                "--directory", str(root)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/"
    finally:
        process.terminate()
        process.wait()


@pytest.fixture(scope="module")
def attacker_site(tmp_path_factory) -> Path:
    root = attacker_catalog(tmp_path_factory.mktemp("attacker") / "catalog")
    return build_site(load_catalog(root), root.parent / "site").out


@pytest.mark.parametrize("server", ["openrecipes serve", "python -m http.server"])
def test_no_script_of_the_evidence_runs_and_the_sites_own_do(attacker_site, server):
    serving = served(attacker_site) if server == "openrecipes serve" else static_server(attacker_site)
    with serving as base, sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                                             args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page()
        dialogs: list[str] = []
        page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))

        def pwned() -> bool:
            return bool(page.evaluate("() => window.__pwned")) or page.title() == "pwned"

        page.goto(base + OURS.replace(".yaml", ".html"))
        links = page.locator("#run-files a").evaluate_all("links => links.map(link => link.href)")
        evil = [link for link in links if "/evil/" in link]
        assert len(evil) >= 5 and not pwned()
        for link in evil + [link for link in links if link not in evil]:  # the payloads first
            response = page.goto(link)
            assert response.ok and response.headers["content-type"].startswith("text/plain"), link
            assert not pwned(), link
            if "-steps.csv" not in link:
                assert "step:" in page.inner_text("body"), link  # the log shown as text, to read
        for name in ("page.html", "page.htm", "page.xhtml", "image.svg", "evil.js"):  # never shipped as itself
            response = page.goto(base + f"evidence/runs/reproductions/evil/{name}")
            assert response.status == 404 and not pwned(), name
        # The site's own scripts run: the compare page fills from its index and each recipe's data script.
        page.goto(base + f"compare.html?a={OURS_SLUG}&b={STOCK_SLUG}")
        page.wait_for_selector("#compare-facts tbody tr")
        assert not pwned() and not dialogs
        browser.close()
