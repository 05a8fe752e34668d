"""The built site crawled over http from 127.0.0.1, as a visitor's browser would fetch it: every link and image on
every page reached from the index answers (no 404), every fragment names an element of its page, no page writes a
file:// address, and every evidence label is one of the site's five words."""

from __future__ import annotations

import re
import urllib.error
import urllib.request
from html.parser import HTMLParser
from urllib.parse import unquote, urldefrag, urljoin, urlsplit

import pytest
from site_helpers import served

VOCABULARY = {"re-derived", "author-reported", "failed", "audited", "predicted"}


class _Page(HTMLParser):
    """A page's links and sources, its element ids, and its evidence labels (the own text of an element of class
    `evidence` or `badge-predicted`, and every data-evidence value)."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.ids: set[str] = set()
        self.labels: list[str] = []
        self._label_depth: list[int] = []
        self._depth = 0

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        self._depth += 1
        for key in ("href", "src"):
            if attributes.get(key):
                self.links.append(attributes[key])
        if attributes.get("id"):
            self.ids.add(attributes["id"])
        if attributes.get("data-evidence"):
            self.labels.append(attributes["data-evidence"])
        if {"evidence", "badge-predicted"} & set((attributes.get("class") or "").split()):
            self._label_depth.append(self._depth)
            self.labels.append("")

    def handle_endtag(self, tag):
        if self._label_depth and self._label_depth[-1] == self._depth:
            self._label_depth.pop()
            self.labels[-1] = self.labels[-1].strip()
        self._depth -= 1

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        self.handle_endtag(tag)

    def handle_data(self, data):
        if self._label_depth and self._label_depth[-1] == self._depth:  # the label's own text, not a mark inside it
            self.labels[-1] += data


def _fetch(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, b""


@pytest.fixture(scope="module")
def crawl(bundled_site):
    """Every page reached from the index: {url: parsed page}, and every other file linked: {url: status}."""
    with served(bundled_site.out) as base:
        pages: dict[str, _Page] = {}
        files: dict[str, int] = {}
        html_text: dict[str, str] = {}
        queue = [base + "index.html"]
        while queue:
            url = queue.pop()
            if url in pages or url in files:
                continue
            status, body = _fetch(url)
            if not url.endswith(".html") or status != 200:
                files[url] = status
                continue
            page = _Page()
            text = body.decode("utf-8")
            page.feed(text)
            pages[url], html_text[url] = page, text
            for link in page.links:
                target = urldefrag(urljoin(url, link)).url
                if urlsplit(target).scheme == "http" and target.startswith(base):
                    queue.append(target)
        yield base, pages, files, html_text


def test_every_page_and_file_reached_from_the_index_answers(crawl, bundled_site):
    base, pages, files, _ = crawl
    missing = [url for url, status in files.items() if status != 200]
    assert missing == []
    built = {page for page in bundled_site.pages}
    reached = {url.removeprefix(base) for url in pages}
    assert built - reached == set()  # every page is reachable from the index


def test_every_fragment_names_an_element_of_its_page(crawl):
    base, pages, _, _ = crawl
    broken = []
    for url, page in pages.items():
        for link in page.links:
            target, fragment = urldefrag(urljoin(url, link))
            if fragment and target in pages and unquote(fragment) not in pages[target].ids:
                broken.append((url.removeprefix(base), link))
    assert broken == []


def test_no_page_writes_a_file_address(crawl):
    _, pages, _, html_text = crawl
    assert [url for url, text in html_text.items() if "file://" in text] == []
    assert not [link for page in pages.values() for link in page.links if urlsplit(link).scheme not in
                ("", "http", "https")]


def test_every_evidence_label_is_one_of_the_five_words(crawl):
    base, pages, _, _ = crawl
    labels = {(url.removeprefix(base), label.lower()) for url, page in pages.items() for label in page.labels}
    assert labels
    outside = {(url, label) for url, label in labels if not re.fullmatch(r"[a-z-]+", label)
               or label not in VOCABULARY}
    assert outside == set()
