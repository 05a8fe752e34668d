"""Contributed evidence is data, never active content: a page or a script holding a real run's step lines is not a
training log (`reproduce`, `record` and `measure` refuse it, naming the line), a site built from a catalog that
holds one anyway ships it as plain text under a name no browser runs, its pages run only the site's own scripts,
`reproduce --write` writes nothing when it exits 1, and `serve` never follows a link named index.html out of its
folder."""

from __future__ import annotations

import base64
import hashlib
import os
import re
import shutil
import urllib.error
import urllib.request
from email.message import Message
from pathlib import Path

import pytest
from conftest import REPO, openrecipes
from evidence_helpers import OURS, RERUN_LOG, active_evidence, attacker_catalog
from site_helpers import served
from test_audit_reproduce_record import another_run

from openrecipes.catalog.store import load_catalog, load_recipe
from openrecipes.errors import UserError
from openrecipes.site.build import build_site

STOCK = "recipes/qwen3-8b/h200/torchtitan-stock-fsdp2.yaml"
ACTIVE_SUFFIXES = (".html", ".htm", ".xhtml", ".svg", ".js", ".mjs", ".xml")


@pytest.fixture
def catalog(tmp_path: Path) -> Path:
    for folder in ("models", "hardware", "recipes/qwen3-8b", "runs/qwen3-8b-h200x2-openrecipes-fsdp2-compile-noac-mb1",
                   "runs/qwen3-8b-h200x2-torchtitan-stock", "runs/reproductions"):
        shutil.copytree(REPO / folder, tmp_path / folder)
    return tmp_path


def _one_error(result) -> str:
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


@pytest.mark.parametrize("name", list(active_evidence("")))
def test_reproduce_refuses_a_page_or_script_holding_a_new_runs_step_lines(catalog, name):
    run = another_run(catalog / RERUN_LOG, catalog / "runs/reproductions/mine/train.log")  # a new run, on its own
    evil = run.with_name(name)
    evil.write_text(active_evidence(run.read_text(encoding="utf-8"))[name], encoding="utf-8")
    before = (catalog / OURS).read_bytes()
    result = openrecipes("reproduce", OURS, evil.relative_to(catalog), "--write", "--by", "x", cwd=catalog)
    error = _one_error(result)
    assert f"{name}:" in error and ("markup" in error or "script comment" in error), error
    assert (catalog / OURS).read_bytes() == before


@pytest.mark.parametrize("command", ["measure", "record"])
def test_measure_and_record_refuse_the_same(catalog, command):
    folder = catalog / "runs/mine"
    run = another_run(catalog / "runs/reproductions/qwen3-8b-h200x2-rerun-20261130/stock/train.log",
                      folder / "source.log")
    (folder / "train.log").write_text(active_evidence(run.read_text(encoding="utf-8"))["page.html"],
                                      encoding="utf-8")
    # a layout the catalog has no recipe of, so that nothing but the log is in the way
    (folder / "command.sh").write_text(load_recipe(catalog / STOCK).run.rstrip("\n")
                                       + " \\\n    --parallelism.fsdp_reshard_after_forward never\n")
    argv = (["measure", "runs/mine/train.log", "--window", "5", "19"] if command == "measure" else
            ["record", "runs/mine", "--like", STOCK, "--name", "mine"])
    error = _one_error(openrecipes(*argv, cwd=catalog))
    assert "train.log:1: HTML or XML markup" in error
    assert not (catalog / "recipes/qwen3-8b/h200/mine.yaml").exists()


@pytest.mark.parametrize("text, line, what", [
    ("{log}<img\nsrc=x\nonerror=alert(1)>\n", "END", "markup"),  # a tag spread over lines
    ("1 // {first}\n", "1", "other text before"),  # each step line commented out, the script between
    ("{log}x\0y\n", "END", "control character"),
])
def test_the_rule_reads_the_whole_file(tmp_path, text, line, what):
    log = (REPO / RERUN_LOG).read_text(encoding="utf-8")
    step = next(ln for ln in log.splitlines() if " step: " in ln)
    path = tmp_path / "train.log"
    path.write_text(text.format(log=log, first=step), encoding="utf-8")
    from openrecipes.measure.logtext import require_log_text  # here: the module is new (the other tests run on any)

    with pytest.raises(UserError) as error:
        require_log_text(path)
    assert (f":{log.count(chr(10)) + 1}:" if line == "END" else f":{line}:") in str(error.value)
    assert what in str(error.value)


def test_every_log_of_our_runs_and_fixtures_is_a_training_log():
    logs = [p for folder in ("runs", "tests/fixtures/logs", "tests/fixtures/contributed-run")
            for p in (REPO / folder).rglob("*") if p.is_file() and p.suffix in (".log", ".jsonl", ".out")]
    assert len(logs) > 80
    from openrecipes.measure.logtext import require_log_text

    for log in logs:
        require_log_text(log)


def test_a_log_cut_mid_character_is_still_a_log(tmp_path):
    path = tmp_path / "train.log"
    path.write_bytes((REPO / RERUN_LOG).read_bytes() + "é".encode()[:1])
    from openrecipes.measure.logtext import require_log_text

    require_log_text(path)


def test_reproduce_write_that_exits_1_writes_nothing(catalog):
    # the stock arm's run measured against the faster recipe: 13% slow, far outside the noise band
    slow = another_run(catalog / "runs/reproductions/qwen3-8b-h200x2-rerun-20261130/stock/train.log",
                       catalog / "runs/reproductions/mine/train.log")
    before = (catalog / OURS).read_bytes()
    result = openrecipes("reproduce", OURS, slow.relative_to(catalog), "--write", "--by", "x", cwd=catalog)
    assert result.returncode == 1 and "OUTSIDE the noise band" in result.stdout
    assert "not written" in result.stderr and (catalog / OURS).read_bytes() == before


@pytest.fixture(scope="module")
def attacker_site(tmp_path_factory) -> Path:
    root = attacker_catalog(tmp_path_factory.mktemp("attacker") / "catalog")
    return build_site(load_catalog(root), root.parent / "site").out


def test_a_catalog_with_active_evidence_ships_it_as_plain_text(attacker_site):
    shipped = [p for p in (attacker_site / "evidence").rglob("*") if p.is_file()]
    assert shipped and all(p.suffix == ".txt" for p in shipped)
    evil = attacker_site / "evidence/runs/reproductions/evil"
    for name, text in active_evidence((REPO / RERUN_LOG).read_text(encoding="utf-8")).items():
        assert (evil / f"{name}.txt").read_text(encoding="utf-8") == text  # byte for byte, as evidence
        assert not (evil / name).exists()
    html = (attacker_site / OURS.replace(".yaml", ".html")).read_text(encoding="utf-8")
    links = re.findall(r'href="([^"]*evidence/[^"]*)"', html)
    assert links and all(link.endswith(".txt") for link in links)
    assert not [p for p in attacker_site.rglob("*") if p.suffix in ACTIVE_SUFFIXES and "evidence" in p.parts]


def test_the_pages_run_only_the_sites_own_scripts_by_hash(attacker_site):
    from openrecipes.site.build import LOADER  # here: new (the other tests run on any version)

    digest = base64.b64encode(hashlib.sha256(LOADER.encode()).digest()).decode()
    for page in ("index.html", "compare.html", OURS.replace(".yaml", ".html")):
        html = (attacker_site / page).read_text(encoding="utf-8")
        csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html).group(1).replace("&#39;", "'")
        assert csp.split("script-src ")[1].split(";")[0].split() == [f"'sha256-{digest}'", "'strict-dynamic'"]
        assert re.findall(r"<script[^>]*>(.*?)</script>", html, re.S) == [LOADER]  # what it loads: the site's own
        for script in re.search(r'data-load="([^"]+)"', html).group(1).split():
            assert script in ("static/site.js", "answers.js", "compare/index.js")
            assert ((attacker_site / page).parent / re.search(r'data-base="([^"]*)"', html).group(1) / script).is_file()



def _get(url: str) -> tuple[int, Message, bytes]:
    try:
        with urllib.request.urlopen(url) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, b""


def test_serve_sends_evidence_logs_csvs_and_yaml_as_text(attacker_site):
    with served(attacker_site) as base:
        for path in ("evidence/runs/reproductions/evil/page.html.txt", "evidence/runs/reproductions/evil/evil.js.txt",
                     "evidence/runs/qwen3-8b-h200x2-torchtitan-stock/train-steps.csv.txt",
                     "recipes/qwen3-8b/h200/openrecipes-fsdp2-compile-noac-mb1.yaml"):
            status, headers, body = _get(base + path)
            assert status == 200 and headers["Content-Type"] == "text/plain; charset=utf-8", path
            assert headers["X-Content-Type-Options"] == "nosniff" and body
        assert _get(base + "evidence/runs/reproductions/evil/page.html")[0] == 404


def test_serve_sends_anything_under_evidence_as_text_whatever_its_name(tmp_path):
    (tmp_path / "evidence").mkdir()
    (tmp_path / "evidence/page.html").write_text("<script>alert(1)</script>", encoding="utf-8")
    with served(tmp_path) as base:
        status, headers, _ = _get(base + "evidence/page.html")
        assert status == 200 and headers["Content-Type"] == "text/plain; charset=utf-8"


@pytest.mark.parametrize("target", ["file", "folder-index"])
def test_serve_never_follows_a_link_named_index_html_out_of_its_folder(tmp_path, target):
    root, secret = tmp_path / "site", tmp_path / "secret.html"
    (root / "sub").mkdir(parents=True)
    secret.write_text("the secret", encoding="utf-8")
    (root / "index.html").symlink_to(secret)
    (root / "sub/index.html").symlink_to(secret)
    (root / "page.html").write_text("a page", encoding="utf-8")
    with served(root) as base:
        for path in ("", "sub/", "index.html", "sub/index.html"):
            status, _, body = _get(base + path)
            assert status == 404 and b"the secret" not in body, path
        assert _get(base + "page.html")[0] == 200


LINK_TARGETS = {"outside-file": "../secret.html", "etc-passwd": "/etc/passwd", "outside-folder": "..", "root": "/",
                "loop": "LOOP", "dangling": "nowhere.html", "proc": "/proc/self/environ", "dev-zero": "/dev/zero"}
ACTIVE_NAMES = ("page.html", "page.htm", "page.xhtml", "image.svg", "script.js", "module.mjs", "feed.xml",
                "PAGE.HTML", "page.html.", "page.shtml", "page.svgz", "no-suffix")


def _hostile_folder(root: Path) -> list[tuple[str, str]]:
    """A folder `serve` did not build: links named index.html (and under other names) out of it in every form, and
    evidence under every active name. Returns (request path, what it must get: 'absent' or 'text')."""
    (root.parent / "secret.html").write_text("the secret <script>window.__pwned=1</script>", encoding="utf-8")
    requests = []
    for name, target in LINK_TARGETS.items():
        for link in (f"{name}/index.html", f"sub/{name}/index.html", f"{name}.html"):
            path = root / link
            path.parent.mkdir(parents=True, exist_ok=True)
            path.symlink_to(path if target == "LOOP" else target)
            requests += [(link, "absent"), (link.removesuffix("index.html"), "absent")]
            requests.append((link.removesuffix("/index.html"), "absent"))
    (root / "evidence").mkdir()
    for name in ACTIVE_NAMES:
        (root / "evidence" / name).write_text("<script>window.__pwned=1</script>", encoding="utf-8")
        requests += [(f"evidence/{name}", "text"), (f"evidence/%2e%2e/evidence/{name}", "text")]
    return requests


def test_serve_answers_every_hostile_path_of_a_folder_it_did_not_build(tmp_path):
    root = tmp_path / "site"
    root.mkdir()
    requests = _hostile_folder(root)
    assert len(requests) >= 90
    with served(root) as base:
        for path, expected in requests:
            status, headers, body = _get(base + path)
            if expected == "absent":
                assert status in (301, 400, 403, 404) and b"secret" not in body and b"root:" not in body, path
            else:
                assert status == 200 and headers["Content-Type"] == "text/plain; charset=utf-8", path
                assert headers["X-Content-Type-Options"] == "nosniff", path


def test_a_log_over_the_size_limit_is_refused_before_it_is_read(catalog):
    huge = catalog / "runs/reproductions/huge/train.log"
    huge.parent.mkdir(parents=True)
    huge.touch()
    os.truncate(huge, 4 * 2**30 + 1)  # sparse: no disk, and nothing to read in the test's time
    error = _one_error(openrecipes("measure", huge, "--window", "5", "19", cwd=catalog))
    assert "over 4 GiB" in error
