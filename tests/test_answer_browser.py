"""The home page's question in Debian's Chromium: the five questions a new user asks each get a measured, published
or predicted line with its time and cost, the same sentences `openrecipes answer` prints; the address carries the
question and the budget, so a reload (or a shared link) shows the same answer.

The site is built from the bundled catalog with a grid holding only these five points (a whole grid is
`openrecipes refresh`'s work of minutes). Skips when /usr/bin/chromium or playwright is missing.
"""

from __future__ import annotations

import json
from urllib.parse import urlencode

import pytest
from conftest import REPO, openrecipes
from site_helpers import served
from test_answer_faces import grids_for
from test_site_browser import CHROMIUM, Browser, chromium  # noqa: F401  (the fixture, one browser per module)

from openrecipes.answer.model import Answer
from openrecipes.answer.text import answer_texts
from openrecipes.catalog.store import load_catalog

pytestmark = [pytest.mark.browser, pytest.mark.slow,
              pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed")]
# "Llama-3.1-8B on 16 x H100 BF16", "Qwen3-8B on 2 x H200", "gpt-oss-20b on 8 x H200", "DeepSeek-V3 on 256 x H100",
# "Qwen3-1.7B on 1 x H100"
FIVE = [("llama-3.1-8b", "H100", 16, "BF16"), ("qwen3-8b", "H200", 2, ""), ("gpt-oss-20b", "H200", 8, ""),
        ("deepseek-v3", "H100", 256, ""), ("qwen3-1.7b", "H100", 1, "")]


@pytest.fixture(scope="module")
def answered_site(tmp_path_factory):
    from openrecipes.site.build import build_site

    folder = tmp_path_factory.mktemp("answers")
    catalog = load_catalog(REPO)
    return build_site(catalog, folder / "site", grids_for(catalog, FIVE, folder / "answers")).out


def terminal(model: str, gpu_type: str, gpus: int, precision: str, tokens: str = "1B") -> list[list[str]]:
    args = ["answer", model, "--gpu", gpu_type, "--gpus", str(gpus), "--tokens", tokens, "--json"]
    done = openrecipes(*args, *(["--precision", precision] if precision else []))
    return answer_texts(Answer.model_validate(json.loads(done.stdout)))


def page_texts(page) -> list[list[str]]:
    """The answer as the page shows it: its heading, each line's sentences, each reason nothing is offered."""
    answer = page.locator("#answer")
    answer.locator(".answer-question").wait_for()
    blocks = answer.locator(".answer-line").evaluate_all(
        "ls => ls.map(l => Array.from(l.querySelectorAll('p')).map(p => p.textContent))")
    return [[answer.locator(".answer-question").text_content()], *blocks,
            *([text] for text in answer.locator(".answer-none").all_text_contents())]


def test_the_five_questions_get_the_terminals_answer_with_time_and_cost(chromium, answered_site):  # noqa: F811
    with served(answered_site) as base:
        b = Browser(chromium, base)
        page = b.page
        for model, gpu_type, gpus, precision in FIVE:
            query = {"model": model, "gpu": gpu_type, "gpus": gpus, "tokens": "1B"} | (
                {"precision": precision} if precision else {})
            page.goto(base + "index.html?" + urlencode(query))
            shown = page_texts(page)
            assert shown == terminal(model, gpu_type, gpus, precision), model
            heads = [block[0] for block in shown[1:] if block[0].split(" ")[0] in ("Measured", "Published", "Planner")]
            assert any(" tokens in " in head and "$" in head for head in heads), (model, heads)
            page.reload()
            assert page_texts(page) == shown
        assert b.errors == [] and b.foreign == []


def test_the_budget_and_the_form_change_the_answer_and_the_address(chromium, answered_site):  # noqa: F811
    with served(answered_site) as base:
        b = Browser(chromium, base)
        page = b.page
        page.goto(base + "index.html?model=qwen3-1.7b&gpu=H100&gpus=1")
        page.fill("#ask-tokens", "2T")
        assert page_texts(page) == terminal("qwen3-1.7b", "H100", 1, "", "2T")
        assert "tokens=2T" in page.url and "model=qwen3-1.7b" in page.url
        page.select_option("#ask-model", "qwen3-8b")
        page.select_option("#ask-gpu", "H200")
        page.select_option("#ask-gpus", "2")
        page.locator("#answer .answer-line").first.wait_for()
        assert "model=qwen3-8b" in page.url and "gpus=2" in page.url
        page.goto(page.url)
        assert page_texts(page) == terminal("qwen3-8b", "H200", 2, "", "2T")
        assert b.errors == [] and b.foreign == []
