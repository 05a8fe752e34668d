"""The built site: every page safe and small, the export complete, hostile recipes inert, run plots, the server."""

from __future__ import annotations

import json
import re
import shutil
import urllib.error
import urllib.request

import pytest
from site_helpers import HOSTILE_CATALOG, HOSTILE_SLUG, PAYLOADS, REPO, served
from typer.testing import CliRunner

from openrecipes.catalog.store import load_catalog
from openrecipes.cli import app
from openrecipes.errors import UserError
from openrecipes.site.build import CSP, LOADER, build_site

# A model page draws its plot inline up to 200 points (Llama 3.1 405B's, with the record's sweeps, is about 160 KB).
PAGE_BUDGET_BYTES = 200 * 1024
# A Plan page carries every GPU type and count's tables folded, each with its time and cost for the token budget
# (Llama 3.1 405B's, planned at every count its published entries ran at, 8 to 8,192 GPUs: about 240 KB).
PLAN_PAGE_BUDGET_BYTES = 300 * 1024
# A record page draws one weak-scaling plot per sweep (Llama 3.1 405B on H100: 19 of them, about 250 KB).
RECORD_PAGE_BUDGET_BYTES = 300 * 1024


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    out = tmp_path_factory.mktemp("hostile-site")
    return build_site(load_catalog(HOSTILE_CATALOG), out)


def test_every_page_carries_the_csp_and_no_inline_script_or_style(bundled_site):
    assert {"index.html", "running.html", "compare.html", "models/gpt-oss-20b/h200/rows8192-gb128-bf16.html",
            "recipes/gpt-oss-20b/h200/attune-tp1-pp1-ep4.html"} <= set(bundled_site.pages)
    for page, size in bundled_site.pages.items():
        html = (bundled_site.out / page).read_text(encoding="utf-8")
        budget = (PLAN_PAGE_BUDGET_BYTES if page.startswith("plan/") else
                  RECORD_PAGE_BUDGET_BYTES if page.endswith("/public-record.html") else PAGE_BUDGET_BYTES)
        assert size <= budget, page
        assert f'<meta http-equiv="Content-Security-Policy" content="{CSP.replace(chr(39), "&#39;")}">' in html, page
        assert re.findall(r"<script[^>]*>(.*?)</script>", html, re.S) == [LOADER], page  # the one inline script
        assert not re.search(r"<style|\sstyle=|\son[a-z]+=", html), page
        # Nothing is loaded from another host; plain links (<a href>, e.g. an author's cite link) may leave.
        assert not re.search(r"src=\"(https?:)?//|<link[^>]*href=\"(https?:)?//", html), page


def test_recipes_json_exports_the_whole_catalog_with_ranks_and_marked_summaries(bundled_site):
    export = json.loads((bundled_site.out / "recipes.json").read_text(encoding="utf-8"))
    entries = {e["slug"]: e for e in export["entries"]}
    catalog = load_catalog(REPO)
    assert set(entries) == {e.slug for e in (*catalog.entries, *catalog.record)}
    assert entries["gpt-oss-20b/h100/published-summary"]["kind"] == "published_summary"
    first = entries["gpt-oss-20b/h200/attune-tp1-pp1-ep4"]
    assert (first["kind"], first["rank"], first["entry"]["result"]["tokens_per_s_per_gpu"]) == ("recipe", 1, 10483.91)
    assert first["page"] == "recipes/gpt-oss-20b/h200/attune-tp1-pp1-ep4.html"


def test_yaml_download_is_the_catalog_file_byte_for_byte(bundled_site):
    path = "recipes/glm-5.2-744b-a40b/b200/attune-tp4-pp2-cp4-mt12k.yaml"
    assert (bundled_site.out / path).read_bytes() == (REPO / path).read_bytes()


def test_hostile_strings_are_escaped_everywhere(hostile):
    pages = [(hostile.out / p).read_text(encoding="utf-8") for p in hostile.pages]
    for html in pages:
        for payload in PAYLOADS:
            assert payload not in html
        assert not re.search(r"<(img|svg)[^>]*\bon(error|load)=", html)
        assert 'id="injected-link"' not in html
    recipe = (hostile.out / f"recipes/{HOSTILE_SLUG}.html").read_text(encoding="utf-8")
    assert "&lt;script&gt;window.__pwned=1;alert(&#34;script&#34;)&lt;/script&gt;" in recipe
    assert 'href="https://example.com/?q=&#34;&gt;&lt;script&gt;' in recipe
    data = (hostile.out / f"compare/{HOSTILE_SLUG}.js").read_text(encoding="ascii")
    assert "<" not in data and "\\u003cscript>" in data


def test_a_rebuild_replaces_its_own_folder_but_never_a_foreign_one(tmp_path):
    catalog = load_catalog(HOSTILE_CATALOG)
    build_site(catalog, tmp_path / "site")
    (tmp_path / "site" / "stale.html").write_text("old")
    build_site(catalog, tmp_path / "site")
    assert not (tmp_path / "site" / "stale.html").exists()
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    with pytest.raises(UserError, match="not an OpenRecipes site build"):
        build_site(catalog, tmp_path / "mine")
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"


def test_recipes_with_stored_runs_get_loss_and_step_time_plots(tmp_path):
    pytest.importorskip("openrecipes.measure.formats", reason="the measure room reads the logs")

    catalog_dir = tmp_path / "catalog"
    source = REPO / "recipes/gpt-oss-20b/h200/attune-tp1-pp1-ep4.yaml"
    target = catalog_dir / "recipes/gpt-oss-20b/h200/with-runs.yaml"
    target.parent.mkdir(parents=True)
    text = source.read_text(encoding="utf-8") + "runs:\n  candidate: runs/cand\n  reference: runs/ref\n"
    target.write_text(text, encoding="utf-8")
    for arm, offset in (("cand", 0.0), ("ref", 0.001)):
        (catalog_dir / "runs" / arm).mkdir(parents=True)
        lines = [json.dumps({"step": s, "loss": 2.0 - 0.05 * s + offset, "step_time_s": 12.0 + 0.1 * (s % 3)})
                 for s in range(20)]
        (catalog_dir / "runs" / arm / "train.log").write_text("\n".join(lines) + "\n")
    report = build_site(load_catalog(catalog_dir), tmp_path / "site")
    html = (report.out / "recipes/gpt-oss-20b/h200/with-runs.html").read_text(encoding="utf-8")
    assert 'src="../../../plots/runs/gpt-oss-20b/h200/with-runs-loss.svg"' in html
    assert 'src="../../../plots/runs/gpt-oss-20b/h200/with-runs-step-time.svg"' in html
    svg = (report.out / "plots/runs/gpt-oss-20b/h200/with-runs-loss.svg").read_text(encoding="utf-8")
    assert svg.startswith("<?xml") and "<script" not in svg and "http://www.w3.org/2000/svg" in svg


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def test_the_server_sends_the_csp_and_never_serves_outside_its_root(hostile, tmp_path):
    root = tmp_path / "root"
    shutil.copytree(hostile.out, root)
    (tmp_path / "secret.txt").write_text("secret")
    (root / "escape").symlink_to(tmp_path / "secret.txt")
    with served(root) as base:
        with urllib.request.urlopen(base) as response:
            assert response.headers["Content-Security-Policy"] == f"{CSP}; frame-ancestors 'none'"
            assert response.headers["X-Content-Type-Options"] == "nosniff"
            assert b"All models" in response.read()
        for path in ("../secret.txt", "%2e%2e/secret.txt", "..%2fsecret.txt", "escape", "static/",
                     "recipes/%2e%2e/%2e%2e/secret.txt"):
            assert _status(base + path) == 404, path


def test_site_build_command_writes_the_site(tmp_path):
    result = CliRunner().invoke(app, ["site", "build", "--catalog", str(HOSTILE_CATALOG), "--out", str(tmp_path / "s")])
    assert result.exit_code == 0, result.output
    written = re.search(r"wrote (\d+) pages", result.output)
    assert written and int(written[1]) == len(list((tmp_path / "s").rglob("*.html")))
    assert (tmp_path / "s" / "index.html").exists()


def test_every_page_links_the_favicon_the_repository_and_a_footer_of_its_own(bundled_site):
    assert (bundled_site.out / "static/favicon.svg").read_text().startswith("<svg")
    footers = {}
    for page in bundled_site.pages:
        html = (bundled_site.out / page).read_text(encoding="utf-8")
        assert re.search(r'<link rel="icon" href="(\.\./)*static/favicon\.svg"', html), page
        assert 'href="https://github.com/openrecipes/openrecipes" id="repository-link"' in html, page  # site.yaml
        assert "file://" not in html, page  # a served site cannot open one
        footers[page.split("/")[0]] = re.search(r"<footer>(.*?)</footer>", html, re.S).group(1)
    assert "validate" in footers["index.html"] and "in your browser" in footers["compare.html"]
    assert "nothing on this page is a measured figure" in footers["running.html"]
    assert "this recipe's published values" in footers["recipes"]


def test_boards_show_costs_that_rank_and_recipe_pages_explain_their_inputs(bundled_site):
    board = (bundled_site.out / "models/qwen3-1.7b/h200/rows8192-gb16-bf16.html").read_text(encoding="utf-8")
    assert '>$0.05</td>' in board and '>$0.09</td>' in board  # no tie on this board: costs as published
    recipe = (bundled_site.out / "recipes/gpt-oss-20b/h200/attune-tp1-pp1-ep4.html").read_text(encoding="utf-8")
    box = recipe[recipe.index('id="before-you-run"'):recipe.index('id="run-command"')]
    for shown in ("$HF_CKPT", "$TORCH_DIST", "$SFT_DATA", "&lt;slime entry module&gt;"):
        assert f"<code>{shown}</code>" in box
    ours = (bundled_site.out / "recipes/qwen3-1.7b/h200/openrecipes-compile-noac-mb4.html").read_text(encoding="utf-8")
    notes = ours[ours.index('id="recipe-notes"'):]
    assert notes.count("<li>") >= 5 and "`" not in notes[:notes.index("</div>")]
    assert 'href="../../../recipes/qwen3-1.7b/h200/torchtitan-stock.html"' in notes  # a recipe path links its page


def test_running_pages_are_written_per_board_with_that_boards_rows(bundled_site):
    glm = (bundled_site.out / "models/glm-5.2-744b-a40b/b200/rows8192-gb128-bf16-running.html").read_text(
        encoding="utf-8")
    assert "--chat-format glm5" in glm and "--rows 12800" in glm and "recipes/glm-5.2-744b-a40b/b200/" in glm
    assert "Patch slime&#39;s mask_utils.py" in glm  # the model's notes come before its rows build
    qwen = (bundled_site.out / "models/qwen3-1.7b/h200/rows8192-gb16-bf16-running.html").read_text(encoding="utf-8")
    assert "openrecipes rows demo --out .data/qwen3-rows --chat-format qwen3 --rows 320 --seed 42" in qwen
    assert "glm5" not in qwen
