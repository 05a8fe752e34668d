"""The catalog's commands carry each entry's evidence level, the one `audit` gives: `show` and `list` (and `--json`),
`list --model/--gpu/--evidence` filters with the public record in `--json` as in the text, `audit` says predicted for
a recipe `plan emit` wrote that never ran, and `show` takes a recipe file wherever it lies."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import openrecipes

REPO = Path(__file__).resolve().parents[1]
SEED = "gpt-oss-20b/h200/attune-tp1-pp1-ep4"  # a seed page's recipe: no logs stored, status verified
LOGGED = "qwen3-8b/h200/torchtitan-stock-fsdp2"  # our measured recipe, its logs under runs/


def _json(*args: object) -> object:
    done = openrecipes(*args)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _audited(*paths: object, catalog: Path = REPO) -> dict[str, str]:
    """`audit --json`'s level by path relative to the catalog."""
    done = openrecipes("audit", *paths, "--catalog", catalog, "--json")
    assert done.returncode in (0, 1), done.stderr
    return {report["path"]: report["evidence"] for report in json.loads(done.stdout)}


def test_show_says_what_audit_says_of_a_seed_and_a_logged_recipe():
    audited = _audited(f"recipes/{SEED}.yaml", f"recipes/{LOGGED}.yaml")
    assert audited == {f"recipes/{SEED}.yaml": "author-reported", f"recipes/{LOGGED}.yaml": "re-derived"}
    for slug in (SEED, LOGGED):
        shown = _json("show", slug, "--json")
        assert shown["evidence"] == audited[shown["path"]]
        text = openrecipes("show", slug).stdout
        assert f"Evidence │ {audited[shown['path']]}:" in " ".join(text.split()).replace("│ │", "│")
    seed = _json("show", SEED, "--json")
    assert seed["recipe"]["status"] == "verified" and seed["evidence"] == "author-reported"


def test_list_json_holds_what_the_text_lists_each_with_audits_level():
    data = _json("list", "--json", "--model", "llama-3.1-8b")
    rows = [*(r for b in data["boards"] for r in b["recipes"]), *data["summaries"], *data["planned"]]
    text = openrecipes("list", "--model", "llama-3.1-8b", columns=250).stdout
    assert any(s["slug"].split("/")[-1].startswith("record-") for s in data["summaries"])  # the public record too
    named = [line.split()[-1] for line in text.splitlines()
             if line and not line.startswith((" ", "Training", "Published")) and "rows ·" not in line]
    assert sorted(named) == sorted(r["slug"].split("/")[-1] for r in rows)
    audited = _audited("recipes/llama-3.1-8b")
    assert {r["path"]: r["evidence"] for r in rows} == audited
    assert set(audited.values()) == {"re-derived", "author-reported", "audited"}
    for row in rows:  # and the text says each one's level on its figures line
        name = row["slug"].split("/")[-1]
        block = text.split(name, 1)[1].split("\n")[1]
        assert block.rstrip().endswith(row["evidence"]), (name, block)


def test_list_without_filters_holds_every_published_entry():
    data = _json("list", "--json")
    listed = {s["path"] for s in data["summaries"]}
    assert listed == {str(p.relative_to(REPO)) for p in (REPO / "recipes").rglob("*.yaml")
                      if p.stem.startswith(("record-", "published-"))}
    assert {s["evidence"] for s in data["summaries"]} == {"author-reported", "audited"}


def test_list_filters_by_model_gpu_and_evidence_keeping_ranks():
    data = _json("list", "--json", "--model", "QWEN3-8B", "--gpu", "h200")
    assert {(b["model"], b["gpu_type"]) for b in data["boards"]} == {("qwen3-8b", "H200")}
    assert all((s["model"], s["gpu_type"]) == ("qwen3-8b", "H200") for s in data["summaries"])
    whole = _json("list", "--json")
    logged = _json("list", "--json", "--evidence", "re-derived")
    assert logged["boards"] and not logged["summaries"]
    for board in logged["boards"]:
        full = next(b for b in whole["boards"] if (b["model"], b["gpu_type"], b["precision"], b["row_tokens"])
                    == (board["model"], board["gpu_type"], board["precision"], board["row_tokens"]))
        ranks = {r["slug"]: r["rank"] for r in full["recipes"]}
        assert all(r["evidence"] == "re-derived" and r["rank"] == ranks[r["slug"]] for r in board["recipes"])
    audited = _json("list", "--json", "--evidence", "audited")
    assert audited["summaries"] and not audited["boards"]
    assert all(s["evidence"] == "audited" for s in audited["summaries"])
    text = openrecipes("list", "--evidence", "audited").stdout
    assert text.count(" · audited") == len(audited["summaries"]) and "Training" not in text


@pytest.mark.parametrize(("option", "value", "named"), [
    ("--model", "no-such-model", "qwen3-8b"), ("--gpu", "X100", "H200"), ("--evidence", "failed", "author-reported"),
])
def test_an_unknown_filter_is_exit_2_naming_the_known_values(option, value, named):
    for json_flag in ((), ("--json",)):
        done = openrecipes("list", option, value, *json_flag)
        assert done.returncode == 2 and not done.stdout
        assert len(done.stderr.strip().splitlines()) == 1
        assert f"{option} {value}" in done.stderr and named in done.stderr


@pytest.fixture(scope="module")
def planned_catalog(tmp_path_factory) -> Path:
    """A catalog holding one recipe `plan emit` wrote, never run."""
    root = tmp_path_factory.mktemp("catalog")
    for folder in ("models", "hardware"):
        shutil.copytree(REPO / folder, root / folder)
    out = root / "recipes/llama-3.1-8b/h200/planned-1.yaml"
    out.parent.mkdir(parents=True)
    done = openrecipes("plan", "emit", "llama-3.1-8b", "--gpu", "H200", "--gpus", "2", "--rank", "1", "--out", out)
    assert done.returncode == 0, done.stderr
    return root


def test_audit_calls_a_planned_recipe_predicted(planned_catalog):
    recipes = {path: level for path, level in _audited(catalog=planned_catalog).items() if path.startswith("recipes/")}
    assert recipes == {"recipes/llama-3.1-8b/h200/planned-1.yaml": "predicted"}
    listed = _json("list", "--catalog", planned_catalog, "--json", "--evidence", "predicted")
    assert [(p["slug"], p["evidence"]) for p in listed["planned"]] == [("llama-3.1-8b/h200/planned-1", "predicted")]
    text = openrecipes("list", "--catalog", planned_catalog).stdout
    assert "Planned recipes" in text and "planned-1" in text and "· predicted" in text


def test_show_takes_a_recipe_file_in_a_catalog_or_not(planned_catalog, tmp_path):
    inside = planned_catalog / "recipes/llama-3.1-8b/h200/planned-1.yaml"
    shown = _json("show", inside, "--json")
    assert (shown["slug"], shown["path"], shown["evidence"]) == (
        "llama-3.1-8b/h200/planned-1", "recipes/llama-3.1-8b/h200/planned-1.yaml", "predicted")
    alone = tmp_path / "mine.yaml"
    shutil.copy(inside, alone)
    shown = _json("show", alone, "--json")
    assert (shown["slug"], shown["evidence"]) == (None, "predicted")
    text = openrecipes("show", alone)
    assert text.returncode == 0 and "predicted: the planner's prediction" in text.stdout
    broken = tmp_path / "broken.yaml"
    broken.write_text("model: nothing\n")
    done = openrecipes("show", broken)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1 and str(broken) in done.stderr
