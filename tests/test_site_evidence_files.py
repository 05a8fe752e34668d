"""The evidence behind every re-derived figure ships with the site: each arm's raw log and command byte for byte, the
steps our log reader read from it as CSV, each reproduction's log; every board exports as CSV; and a link with a
fragment (a model page's run rows) reaches its row instead of a file named with %23."""

from __future__ import annotations

import csv
import io
import re

from site_helpers import REPO

from openrecipes.catalog.store import load_catalog
from openrecipes.measure.formats import read_log
from openrecipes.site.pages import site_pages

OURS_8B = "qwen3-8b/h200/openrecipes-fsdp2-compile-noac-mb1"


def _links(html: str) -> list[str]:
    return re.findall(r'href="([^"]+)"', html)


def test_every_re_derived_recipe_links_its_logs_commands_and_steps(bundled_site):
    catalog = load_catalog(REPO)
    with_runs = [e for e in catalog.recipes if e.entry.runs]
    assert with_runs
    for entry in with_runs:
        page = bundled_site.out / f"recipes/{entry.slug}.html"
        links = [(page.parent / link).resolve() for link in _links(page.read_text(encoding="utf-8"))
                 if "evidence/" in link]
        for folder in (entry.entry.runs.candidate, entry.entry.runs.reference):
            if not folder:
                continue
            log = bundled_site.out / "evidence" / folder / "train.log.txt"  # .txt: every host serves it as text
            assert log.read_bytes() == (REPO / folder / "train.log").read_bytes()
            steps = list(csv.DictReader(io.StringIO((log.parent / "train-steps.csv.txt").read_text())))
            table = read_log(REPO / folder / "train.log")
            assert [int(row["step"]) for row in steps] == [step.step for step in table.steps]
            assert [row["loss"] for row in steps] == ["" if s.loss is None else str(s.loss) for s in table.steps]
            assert {log.resolve(), (log.parent / "train-steps.csv.txt").resolve()} <= set(links), entry.slug
            if (REPO / folder / "command.sh").exists():
                assert (log.parent / "command.sh.txt").resolve() in links


def test_a_reproduction_links_its_stored_log(bundled_site):
    html = (bundled_site.out / f"recipes/{OURS_8B}.html").read_text(encoding="utf-8")
    log = "runs/reproductions/qwen3-8b-h200x2-rerun-20261130/ours/train.log"
    assert f'href="../../../evidence/{log}.txt"' in html
    assert (bundled_site.out / "evidence" / f"{log}.txt").read_bytes() == (REPO / log).read_bytes()


def test_every_board_exports_as_csv_with_every_rank(bundled_site):
    site = site_pages(load_catalog(REPO))
    for section in site.sections:
        for board_page in section.boards:
            html = (bundled_site.out / board_page.path).read_text(encoding="utf-8")
            assert f'href="../../../{board_page.csv_path}" class="board-csv" download' in html
            rows = list(csv.DictReader(io.StringIO((bundled_site.out / board_page.csv_path).read_text())))
            assert [row["slug"] for row in rows] == [e.slug for e in board_page.board.ranked]
            assert [int(row["rank"]) for row in rows] == list(range(1, len(rows) + 1))
            for row, entry in zip(rows, board_page.board.ranked, strict=True):
                assert float(row["tokens_per_s_per_gpu"]) == entry.entry.result.tokens_per_s_per_gpu
                assert row["evidence"] == site.evidence(entry)


def test_a_link_with_a_fragment_reaches_its_row(bundled_site):
    html = (bundled_site.out / "models/llama-3.1-70b/index.html").read_text(encoding="utf-8")
    assert "%23" not in html
    fragments = [link for link in _links(html) if "#" in link and not link.startswith(("#", "https:"))]
    assert fragments
    for link in fragments:
        path, fragment = link.split("#")
        target = (bundled_site.out / "models/llama-3.1-70b" / path).read_text(encoding="utf-8")
        assert f'id="{fragment}"' in target, link
