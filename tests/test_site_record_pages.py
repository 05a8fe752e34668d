"""A public record too long for one page continues on further pages: on a small synthetic record (the fixture
catalog's weak-scaling sweep copied under new sweep ids, and the page limits made small), every published run is
on exactly one page and every link to it finds it there, a sweep's rows stay together with its plot, each page
draws its sweeps on one plot, and no page is over the record pages' budget."""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from html import unescape

import pytest
from site_helpers import REPO

from openrecipes import forked
from openrecipes.catalog import store
from openrecipes.catalog.store import load_catalog
from openrecipes.site import build, record
from openrecipes.site.build import build_site

RECORD_CATALOG = REPO / "tests/fixtures/site/record-catalog"
SWEEP_FOLDER = "recipes/llama-3.1-405b/gb200"
COPIES = 4  # 4 more sweeps of 3 runs: 15 runs in 5 sweeps on GB200
BUDGET = 300 * 1024


@pytest.fixture(scope="module")
def paged_site(tmp_path_factory):
    root = tmp_path_factory.mktemp("paged-record") / "catalog"
    shutil.copytree(RECORD_CATALOG, root)
    for source in sorted((root / SWEEP_FOLDER).glob("record-*.yaml")):
        for copy in range(COPIES):
            text = source.read_text(encoding="utf-8").replace("    sweep: ", f"    sweep: copy{copy}-")
            source.with_name(f"{source.stem}-copy{copy}.yaml").write_text(text, encoding="utf-8")
    patch = pytest.MonkeyPatch()
    patch.setattr(record, "RECORD_PAGE_ROWS", 7)  # two sweeps of three runs fill a page
    patch.setattr(record, "RECORD_PAGE_SWEEPS", 2)
    try:
        catalog = load_catalog(root)
        yield catalog, build_site(catalog, tmp_path_factory.mktemp("paged-record") / "site")
    finally:
        patch.undo()


def _record_pages(site) -> dict[str, str]:
    return {path: (site.out / path).read_text(encoding="utf-8") for path in site.pages
            if re.search(r"/public-record(-\d+)?\.html$", path)}


def test_every_published_run_is_on_exactly_one_page_and_its_links_find_it(paged_site):
    catalog, site = paged_site
    pages = _record_pages(site)
    assert sorted(p for p in pages if "llama-3.1-405b/gb200" in p) == [
        "models/llama-3.1-405b/gb200/public-record-2.html", "models/llama-3.1-405b/gb200/public-record-3.html",
        "models/llama-3.1-405b/gb200/public-record.html"]
    shown = Counter(unescape(slug) for html in pages.values()
                    for slug in re.findall(r'<tr id="run-[^"]+" data-slug="([^"]+)"', html))
    assert shown == Counter(e.slug for e in catalog.record)
    # recipes.json, the model page's plot and the Plan page link each run's row on the page that holds it
    export = json.loads((site.out / "recipes.json").read_text(encoding="utf-8"))
    links = [e["public_record"]["page"] for e in export["entries"] if "public_record" in e]
    model_page = (site.out / "models/llama-3.1-405b/index.html").read_text(encoding="utf-8")
    links += [link.removeprefix("../../") for link in re.findall(r'href="(\.\./\.\./models/[^"]+#run-[^"]+)"',
                                                                 model_page)]
    assert len(links) > len(catalog.record)
    for link in links:
        path, _, anchor = link.partition("#")
        assert f'id="{anchor}"' in pages[path], link
    # each page links every page of its record
    for path, html in pages.items():
        if "llama-3.1-405b/gb200" in path:
            assert len(re.findall(r'<nav class="pager" aria-label="Record pages">', html)) == 1


def test_a_sweep_stays_whole_beside_its_rows_and_each_page_draws_one_plot(paged_site):
    _, site = paged_site
    for path, html in _record_pages(site).items():
        sweeps = re.findall(r'<div class="sweep" id="sweep-([^"]+)">', html)
        assert len(sweeps) <= 2 and html.count("<svg") == (1 if sweeps else 0), path
        slugs = re.findall(r'<tr id="run-[^"]+" data-slug="([^"]+)"', html)
        assert len(slugs) <= 7, path
        for sweep in sweeps:  # the sweep's three runs (its copies' files end -copyN) are rows of this page
            points = re.search(rf'id="sweep-{re.escape(sweep)}">.*?</table>', html, re.S).group(0)
            assert len(re.findall(r"<tr><td", points)) == 3
            copy = re.match(r"copy(\d+)-", sweep)
            suffix = f"-copy{copy.group(1)}" if copy else "-gbs"
            assert sum(1 for slug in slugs if "llama-3.1-405b/gb200" in slug
                       and re.search(rf"{suffix}\d*$" if not copy else rf"{suffix}$", slug)) == 3, (path, sweep)


def test_no_record_page_is_over_its_budget(paged_site):
    _, site = paged_site
    assert all(site.pages[path] <= BUDGET for path in _record_pages(site))


def test_written_on_every_core_the_site_is_the_same_bytes(paged_site, tmp_path, monkeypatch):
    catalog, site = paged_site
    monkeypatch.setattr(build, "PARALLEL_JOBS", 1)  # the record pages and recipes in forked processes
    monkeypatch.setattr(forked, "cores", lambda: 2)
    forked_site = build_site(catalog, tmp_path / "site")
    assert forked_site.pages == site.pages
    files = sorted(p.relative_to(site.out) for p in site.out.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(forked_site.out) for p in forked_site.out.rglob("*") if p.is_file())
    assert all((site.out / f).read_bytes() == (forked_site.out / f).read_bytes() for f in files)


def test_validated_on_every_core_the_catalog_is_the_same(paged_site, monkeypatch):
    catalog, _ = paged_site
    monkeypatch.setattr(store, "PARALLEL_FILES", 1)
    monkeypatch.setattr(forked, "cores", lambda: 2)
    assert load_catalog(catalog.root) == catalog
