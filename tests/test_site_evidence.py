"""The site shows what `openrecipes audit` computes: each recipe's evidence level on its board row and page (with a
filter on the board), its reproductions, and both in recipes.json."""

from __future__ import annotations

import json
import shutil

from site_helpers import REPO

from openrecipes.catalog.store import load_catalog
from openrecipes.site.build import build_site

BOARD_8B = "models/qwen3-8b/h200/rows8192-gb16-bf16.html"
OURS_8B = "qwen3-8b/h200/openrecipes-fsdp2-compile-noac-mb1"


def _row(html: str, slug: str) -> str:
    start = html.index(f'<tr data-slug="{slug}"')
    return html[start:html.index("</tr>", start)]


def test_board_rows_carry_the_computed_level_and_the_reproduced_mark(bundled_site):
    html = (bundled_site.out / BOARD_8B).read_text(encoding="utf-8")
    assert 'select data-evidence-filter="leaderboard"' in html
    row = _row(html, OURS_8B)
    assert 'data-evidence="re-derived"' in row and "reproduced 1×" in row
    seeds = (bundled_site.out / "models/gpt-oss-20b/h200/rows8192-gb128-bf16.html").read_text(encoding="utf-8")
    assert 'data-evidence="author-reported"' in _row(seeds, "gpt-oss-20b/h200/attune-tp1-pp1-ep4")


def test_recipe_page_shows_the_level_and_each_reproduction(bundled_site):
    html = (bundled_site.out / f"recipes/{OURS_8B}.html").read_text(encoding="utf-8")
    assert '<dd id="evidence">re-derived' in html
    assert "Reproduced 1×" in html and "+1.93%" in html and "10,017.53" in html
    assert "runs/reproductions/qwen3-8b-h200x2-rerun-20261130/ours/train.log" in html


def test_recipes_json_carries_evidence_and_reproductions(bundled_site):
    export = {e["slug"]: e for e in json.loads((bundled_site.out / "recipes.json").read_text())["entries"]}
    assert export[OURS_8B]["evidence"] == "re-derived"
    assert export[OURS_8B]["reproductions"] == {"count": 1, "lowest_delta_percent": 1.93, "highest_delta_percent": 1.93}
    assert export[OURS_8B]["entry"]["reproductions"][0]["delta_percent"] == 1.93
    assert export["gpt-oss-20b/h200/attune-tp1-pp1-ep4"]["evidence"] == "author-reported"


def test_a_tampered_log_shows_failed_on_the_site(tmp_path):
    for folder in ("models", "hardware", "recipes/qwen3-8b", "runs/qwen3-8b-h200x2-openrecipes-fsdp2-compile-noac-mb1",
                   "runs/qwen3-8b-h200x2-torchtitan-stock", "runs/reproductions"):
        shutil.copytree(REPO / folder, tmp_path / "catalog" / folder)
    log = tmp_path / "catalog/runs/qwen3-8b-h200x2-openrecipes-fsdp2-compile-noac-mb1/train.log"
    log.write_text(log.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    report = build_site(load_catalog(tmp_path / "catalog"), tmp_path / "site")
    html = (report.out / BOARD_8B).read_text(encoding="utf-8")
    assert 'data-evidence="failed"' in _row(html, OURS_8B)
