"""The site in Debian's Chromium through Playwright: the walk a reader takes, figures equal to the catalog's,
copy buttons, no console errors, no request leaving 127.0.0.1, and a hostile recipe that stays inert.

Skips when /usr/bin/chromium or playwright is missing (scripts/setup.sh test installs both).
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import pytest
from site_helpers import HOSTILE_CATALOG, HOSTILE_SLUG, PAYLOADS, REPO, served

from openrecipes.audit.noise import noise_band_percent
from openrecipes.catalog.store import load_catalog
from openrecipes.plan.pages import PLAN_TOP
from openrecipes.site import format as fmt
from openrecipes.site.build import build_site
from openrecipes.site.pages import site_pages

CHROMIUM = Path("/usr/bin/chromium")
sync_api = pytest.importorskip("playwright.sync_api")
pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed")]
SCREENSHOTS = REPO / "test-output" / "screenshots"


class Browser:
    """One page of a fresh context that records console errors, dialogs and every request off 127.0.0.1."""

    def __init__(self, browser, base: str):
        self.errors: list[str] = []
        self.dialogs: list[str] = []
        self.foreign: list[str] = []
        self.context = browser.new_context(viewport={"width": 1280, "height": 900})
        self.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=base.rstrip("/"))
        self.context.set_default_timeout(5000)
        self.context.route("**/*", self._route)
        self.page = self.context.new_page()
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("dialog", self._dialog)

    def _route(self, route):
        if urlsplit(route.request.url).hostname == "127.0.0.1":
            route.continue_()
        else:
            self.foreign.append(route.request.url)
            route.abort()

    def _dialog(self, dialog):
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def screenshot(self, name: str) -> None:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        # Full-page screenshots of long pages take seconds on a loaded machine: not the 5 s a click gets.
        self.page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True, timeout=60000)

    def clipboard_after_click(self, button_selector: str) -> str:
        self.page.evaluate("navigator.clipboard.writeText('')")
        self.page.click(button_selector)
        # Polled from Python: wait_for_function would evaluate a string in the page, which the CSP forbids.
        for _ in range(50):
            if text := self.page.evaluate("navigator.clipboard.readText()"):
                return text
            self.page.wait_for_timeout(20)
        return ""


@pytest.fixture(scope="module")
def chromium():
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"])
        yield browser
        browser.close()


def _plan_prediction(entry):
    from openrecipes.plan.calibrate import measured_point
    from openrecipes.plan.predict import context, predict_layout

    point = measured_point(entry.slug, entry.entry)
    return predict_layout(context(point.request), point.layout).exported()


def test_index_to_board_to_recipe_to_compare(chromium, bundled_site):
    site = site_pages(load_catalog(REPO))
    board = next(p for p in site.section("gpt-oss-20b").boards if p.board.gpu_type == "H200")
    with served(bundled_site.out) as base:
        b = Browser(chromium, base)
        page = b.page
        page.goto(base)
        row = page.locator('tr[data-model="gpt-oss-20b"][data-gpu="H200"]')
        assert row.locator(".best-tokens").inner_text() == "10,483.9"
        assert row.locator(".lowest-usd").inner_text() == "$0.21"
        b.screenshot("index")

        row.locator(f'a[href$="{board.path}"]').click()
        page.wait_for_url("**/models/gpt-oss-20b/h200/rows8192-gb128-bf16.html")
        assert page.locator("#workload-label").inner_text() == "8,192-token SFT rows · global batch 128 · BF16"
        rows = page.locator("#leaderboard tbody tr")
        assert rows.evaluate_all("rs => rs.map(r => r.dataset.slug)") == [e.slug for e in board.board.ranked]
        for rank, entry in enumerate(board.board.ranked):
            r, cells = entry.entry, rows.nth(rank)
            assert cells.locator(".rank").inner_text() == f"#{rank + 1}"
            assert cells.locator(".tokens").inner_text() == fmt.tokens_board(r.result.tokens_per_s_per_gpu)
            assert cells.locator(".usd").inner_text() == fmt.usd(r.result.usd_per_million_tokens)
            assert cells.locator(".gpus").inner_text() == str(r.gpu.count)
            assert cells.locator(".layout").inner_text() == r.layout.label
            assert cells.locator(".measured").inner_text() == str(r.result.measured)
        cards = page.locator(".other-gpus .card")
        assert cards.evaluate_all("cs => cs.map(c => c.dataset.gpu)") == ["H100", "H200", "B200"]
        assert "this page" in cards.nth(1).inner_text() and "14,536.3" in cards.nth(2).inner_text()
        b.screenshot("board")

        page.click("#leaderboard th:has-text('Tokens/s per GPU')")  # first click: the fastest first
        assert rows.first.get_attribute("data-slug") == board.board.ranked[0].slug
        page.click("#leaderboard th:has-text('Tokens/s per GPU')")  # second click: the slowest first
        assert rows.first.get_attribute("data-slug") == board.board.ranked[-1].slug
        page.fill("input[data-filter=leaderboard]", "PP2")
        assert page.locator("#leaderboard tbody tr:visible").count() == 1
        page.fill("input[data-filter=leaderboard]", "")

        page.click("a.plan-link")
        page.wait_for_url("**/plan/gpt-oss-20b.html")
        assert "Predicted, not measured." in page.locator(".predicted-banner").inner_text()
        page.click("#plan-summary a[href='#plan-h200-8']")  # the short answer's link opens the folded size
        measured = page.locator("#plan-h200-8 tr[data-slug='gpt-oss-20b/h200/attune-tp1-pp1-ep4']")
        assert measured.locator(".measured").inner_text() == "10,483.91 BF16"
        own = _plan_prediction(site.catalog.find("attune-tp1-pp1-ep4"))
        assert measured.locator(".predicted").inner_text() == fmt.tokens_board(own.tokens_per_s_per_gpu)
        assert page.locator("#plan-h200-8 table.plan-rows tbody tr").count() == PLAN_TOP
        b.screenshot("plan")
        page.go_back()  # the short answer's link to the size
        page.go_back()

        first = board.board.ranked[0]
        page.click(f'tr[data-slug="{first.slug}"] a.recipe-link')
        page.wait_for_url(f"**/recipes/{first.slug}.html")
        facts = page.locator("#facts dd[data-fact]")
        shown = list(zip(facts.evaluate_all("ds => ds.map(d => d.dataset.fact)"), facts.all_inner_texts(),
                         strict=True))
        assert shown == fmt.recipe_facts(first.entry)
        assert b.clipboard_after_click("button[data-copy=run-command]") == first.entry.run
        assert b.clipboard_after_click("button[data-copy=citation-bibtex]").startswith("@article{fan2026attune,")
        download = page.locator("a[download]").get_attribute("href")
        assert page.request.get(base + f"recipes/{first.slug}.yaml").text() == (REPO / first.path).read_text()
        assert download.endswith(f"{first.slug}.yaml")
        b.screenshot("recipe")

        page.click("#compare-link")
        page.wait_for_selector("#compare-facts tbody tr")
        second = board.board.ranked[1]
        assert page.locator("#head-a").inner_text() == first.name
        assert page.locator("#head-b").inner_text() == second.name
        tokens = page.locator('#compare-figures tr[data-figure="Tokens/s per GPU"] td').all_inner_texts()
        assert tokens[:2] == [fmt.tokens_detail(e.entry.result.tokens_per_s_per_gpu) for e in (first, second)]
        changed = page.locator("#compare-arguments tbody tr").first.locator("th, td").all_inner_texts()
        assert changed[0] == "--pipeline-model-parallel-size" and changed[2:] == ["1", "2"]
        assert changed[1] == "placement"
        page.select_option("#pick-b", "glm-5.2-744b-a40b/b200/attune-tp4-pp2-cp8")
        sync_api.expect(page.locator("#head-b")).to_have_text("attune-tp4-pp2-cp8")
        b.screenshot("compare")

        page.click("nav >> text=Running a recipe")
        assert "openrecipes rows build --conversations" in page.locator("#step-rows").inner_text()
        b.screenshot("running")
        assert b.errors == [] and b.foreign == [] and b.dialogs == []


def test_the_site_works_from_file_urls(chromium, bundled_site):
    b = Browser(chromium, "http://127.0.0.1")
    b.context.unroute("**/*")
    b.page.goto((bundled_site.out / "compare.html").as_uri())
    b.page.wait_for_selector("#compare-facts tbody tr")
    assert b.page.locator("#head-a").inner_text() == "attune-tp4-pp2-cp4-mt16k"
    assert b.errors == []


def test_a_hostile_recipe_renders_inert(chromium, tmp_path):
    build_site(load_catalog(HOSTILE_CATALOG), tmp_path / "site")
    with served(tmp_path / "site") as base:
        b = Browser(chromium, base)
        for path in ("index.html", "models/gpt-oss-20b/h200/rows8192-gb128-bf16.html",
                     f"recipes/{HOSTILE_SLUG}.html", "plan/gpt-oss-20b.html", "compare.html"):
            b.page.goto(base + path)
            b.page.wait_for_load_state("load")
            if path == "compare.html":
                b.page.wait_for_selector("#compare-facts tbody tr")
            for button in b.page.locator("button.copy").all():
                button.click()
            injected = b.page.evaluate("() => document.querySelectorAll("
                                       "'[onerror], [onload], #injected-link, img[src=x], svg:not(.plot-svg)').length")
            assert injected == 0, path
            assert b.page.evaluate("() => window.__pwned") is None, path
        text = b.page.locator("body").inner_text()
        assert PAYLOADS[1] in text  # the compare page shows the payload as text
        b.page.goto(base + f"recipes/{HOSTILE_SLUG}.html")
        body = b.page.locator("body").inner_text()
        assert all(payload in body for payload in PAYLOADS)
        b.screenshot("hostile-recipe")
        assert b.dialogs == [] and b.foreign == [] and b.errors == []


# One page of each type, as a reader reaches it (the compare page with two recipes of different boards).
PAGE_TYPES = {
    "index": "index.html",
    "board": "models/gpt-oss-20b/h200/rows8192-gb128-bf16.html",
    "recipe": "recipes/gpt-oss-20b/h200/attune-tp1-pp1-ep4.html",
    "our-recipe": "recipes/qwen3-1.7b/h200/openrecipes-compile-noac-mb4.html",
    "running": "running.html",
    "board-running": "models/glm-5.2-744b-a40b/b200/rows8192-gb128-bf16-running.html",
    "compare": "compare.html?a=glm-5.2-744b-a40b/b200/attune-tp4-pp2-cp8&b=qwen3-1.7b/h200/torchtitan-stock",
    "plan": "plan/qwen3-1.7b.html",
    "model": "models/llama-3.1-70b/index.html",
    "public-record": "models/llama-3.1-70b/h100/public-record.html",
    "card-only-model": "models/mixtral-8x7b/index.html",
}
AXE = REPO / "tests/vendor/axe-core/axe.min.js"


@pytest.fixture(scope="module")
def bundled(bundled_site):
    with served(bundled_site.out) as base:
        yield site_pages(load_catalog(REPO)), base


def _open(b: Browser, base: str, kind: str) -> None:
    b.page.goto(base + PAGE_TYPES[kind])
    b.page.wait_for_load_state("load")
    if kind == "compare":
        b.page.wait_for_selector("#compare-figures tbody tr")


@pytest.mark.parametrize("width", [390, 1280])
@pytest.mark.parametrize("kind", PAGE_TYPES)
def test_every_page_type_fits_the_window_without_page_scroll(chromium, bundled, kind, width):
    site, base = bundled
    b = Browser(chromium, base)
    b.page.set_viewport_size({"width": width, "height": 900})
    _open(b, base, kind)
    b.screenshot(f"{kind}-{width}")
    assert b.page.evaluate("document.documentElement.scrollWidth") <= width
    # A column hidden on a phone hides its header too: every table shows as many headers as cells per row.
    mismatched = b.page.evaluate("""() => Array.from(document.querySelectorAll('table.sortable')).filter(t => {
        const visible = cells => Array.from(cells).filter(c => c.offsetParent !== null).length;
        return Array.from(t.tBodies[0].rows).some(r => visible(r.cells) !== visible(t.tHead.rows[0].cells));
    }).map(t => t.id)""")
    assert mismatched == []
    assert b.errors == [] and b.foreign == []


def test_the_fastest_gpt_oss_h200_recipe_is_one_tap_from_the_index_on_a_phone(chromium, bundled):
    site, base = bundled
    board = next(p for p in site.section("gpt-oss-20b").boards if p.board.gpu_type == "H200")
    fastest = board.board.ranked[0]
    b = Browser(chromium, base)
    b.page.set_viewport_size({"width": 390, "height": 800})
    b.page.goto(base)
    b.page.locator('tr[data-model="gpt-oss-20b"][data-gpu="H200"] .best-recipe a').click()
    b.page.wait_for_url(f"**/recipes/{fastest.slug}.html")
    command = b.page.locator("#run-command")
    assert command.evaluate("e => e.scrollWidth <= e.clientWidth && e.scrollHeight <= e.clientHeight")  # shown whole
    assert b.clipboard_after_click("button[data-copy=run-command]") == fastest.entry.run
    needed = b.page.locator("#run-inputs dt code").all_inner_texts()
    assert {"$HF_CKPT", "$TORCH_DIST", "$SFT_DATA", "<slime entry module>"} <= set(needed)
    assert "from unknown" not in b.page.locator("#run-inputs").inner_text()
    assert b.errors == []


def test_every_point_of_a_pareto_plot_links_to_its_recipe(chromium, bundled):
    site, base = bundled
    b = Browser(chromium, base)
    b.page.goto(base)
    for section in site.sections:
        if not section.boards:
            continue
        links = b.page.locator(f"[id=\"plot-{section.folder}\"] svg a")
        hrefs = links.evaluate_all("as => as.map(a => a.getAttribute('href'))")
        names = links.evaluate_all("as => as.map(a => a.getAttribute('aria-label'))")
        expected = {(f"recipes/{p.entry.slug}.yaml.txt" if p.entry.is_summary else f"recipes/{p.entry.slug}.html")
                    for p in section.points}
        assert set(hrefs) == expected  # every point: its marker and its number
        assert len(hrefs) == 2 * len(section.points) and all(names)
        key = b.page.locator(f"[id=\"plot-{section.folder}\"] ol.plot-key li")
        assert key.count() == len(section.points)
    # Two GLM recipes 0.1 tokens/s apart get two separate numbers, each clickable.
    glm = site.section("GLM-5.2-744B-A40B")
    second = next(p for p in glm.points if p.entry.name == "attune-tp4-pp2-cp4-mt12k")
    b.page.locator(f'[id="plot-{glm.folder}"] svg a[href="recipes/{second.entry.slug}.html"] text').click()
    b.page.wait_for_url(f"**/recipes/{second.entry.slug}.html")
    assert b.errors == []


def test_sorting_puts_the_best_first_on_the_first_click(chromium, bundled):
    site, base = bundled
    board = next(p for p in site.section("qwen3-1.7b").boards if p.board.gpu_type == "H200")
    b = Browser(chromium, base)
    b.page.goto(base + board.path)
    rows = b.page.locator("#leaderboard tbody tr")

    def order(column):
        b.page.click(f"#leaderboard th:has-text('{column}')")
        return rows.evaluate_all("rs => rs.map(r => r.dataset.slug)")

    fastest_first = [e.slug for e in board.board.ranked]
    assert order("Tokens/s per GPU") == fastest_first
    assert order("$ / 1M tokens") == sorted(fastest_first, key=lambda slug: site.usd_values[slug])  # cheapest first
    assert order("$ / 1M tokens")[0] == "qwen3-1.7b/h200/torchtitan-stock"  # second click: dearest first
    assert rows.locator(".usd").all_inner_texts() == [site.usd_texts[s] for s in fastest_first[::-1]]


def test_compare_shows_deltas_the_better_side_and_warns_across_boards(chromium, bundled):
    site, base = bundled
    fast, slow = next(p for p in site.section("gpt-oss-20b").boards if p.board.gpu_type == "H200").board.ranked
    b = Browser(chromium, base)
    b.page.goto(base + f"compare.html?a={fast.slug}&b={slow.slug}")
    b.page.wait_for_selector("#compare-figures tbody tr")
    assert b.page.locator("#compare-warning").is_hidden()
    assert b.page.locator("#summary-a").inner_text() == \
        f"gpt-oss-20b on H200 · #1 on Training gpt-oss-20b on H200 · " \
        f"{site.board_of[fast.slug][0].board.workload.label} · evidence {site.evidence(fast)}"
    tokens = b.page.locator('#compare-figures tr[data-figure="Tokens/s per GPU"] td')
    a_value, b_value = (e.entry.result.tokens_per_s_per_gpu for e in (fast, slow))
    delta = b_value - a_value
    assert tokens.nth(2).inner_text() == f"−{abs(delta):,.2f}"
    assert tokens.nth(3).inner_text() == f"−{abs(delta) / a_value * 100:.1f}%"
    # 9.9% apart, inside the seeds' noise band: neither is marked the winner
    noise = max(noise_band_percent(e.entry.result.step_time_cv_percent) for e in (fast, slow))
    assert abs(delta) / a_value * 100 <= noise
    assert tokens.nth(4).inner_text() == f"within noise (±{noise:.1f}%)"
    assert "better" not in tokens.nth(0).get_attribute("class") and "worse" not in tokens.nth(1).get_attribute("class")
    usd = b.page.locator('#compare-figures tr[data-figure="$ / 1M tokens"] td')
    assert usd.nth(4).inner_text() == f"within noise (±{noise:.1f}%)"
    # beyond the band the faster side is marked
    b.page.goto(base + "compare.html?a=qwen3-1.7b/h200/openrecipes-compile-noac-mb4&b=qwen3-1.7b/h200/torchtitan-stock")
    b.page.wait_for_selector("#compare-figures tbody tr")
    tokens = b.page.locator('#compare-figures tr[data-figure="Tokens/s per GPU"] td')
    assert tokens.nth(4).inner_text() == "A (higher is better)"
    assert "better" in tokens.nth(0).get_attribute("class") and "worse" in tokens.nth(1).get_attribute("class")
    b.page.goto(base + f"compare.html?a={fast.slug}&b={slow.slug}")
    b.page.wait_for_selector("#compare-figures tbody tr")

    b.page.select_option("#pick-b", "qwen3-1.7b/h200/torchtitan-stock")
    sync_api.expect(b.page.locator("#compare-warning")).to_be_visible()
    warning = b.page.locator("#compare-warning").inner_text()
    assert "different models" in warning and "different GPU types" not in warning  # both H200
    assert "different workloads" in warning
    b.page.select_option("#pick-a", "glm-5.2-744b-a40b/b200/attune-tp4-pp2-cp8")
    sync_api.expect(b.page.locator("#compare-warning")).to_contain_text("different GPU types (B200 and H200)")
    assert b.errors == []


def test_an_unknown_slug_in_the_address_is_an_error_not_a_default(chromium, bundled):
    site, base = bundled
    b = Browser(chromium, base)
    b.page.goto(base + "compare.html?a=no/such/recipe&b=qwen3-1.7b/h200/torchtitan-stock")
    error = b.page.locator("#compare-error")
    sync_api.expect(error).to_be_visible()
    assert "a=no/such/recipe" in error.inner_text()
    assert b.page.locator("#compare-figures tbody tr").count() == 0  # nothing compared against a stand-in
    assert b.page.locator("#pick-a").input_value() == ""
    b.page.select_option("#pick-a", "qwen3-1.7b/h200/openrecipes-compile-noac-mb4")
    b.page.wait_for_selector("#compare-figures tbody tr")
    assert error.is_hidden()
    assert b.errors == []


@pytest.mark.parametrize("kind", list(PAGE_TYPES))
def test_no_serious_or_critical_accessibility_violation(chromium, bundled, kind):
    site, base = bundled
    b = Browser(chromium, base)
    b.context.close()
    # axe is injected for the test only: this context lets its script in past the pages' CSP.
    b.context = chromium.new_context(viewport={"width": 1280, "height": 900}, bypass_csp=True)
    b.page = b.context.new_page()
    _open(b, base, kind)
    b.page.add_script_tag(path=str(AXE))
    result = b.page.evaluate("() => axe.run(document, {resultTypes: ['violations']})")
    serious = [(v["id"], v["impact"], [n["target"] for n in v["nodes"]][:3]) for v in result["violations"]
               if v["impact"] in ("serious", "critical")]
    assert serious == []
