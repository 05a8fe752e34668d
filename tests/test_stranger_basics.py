"""Small things a new user meets first: what `measure` without a recipe cannot say and why, the folders the
documented commands write staying out of git, and no page sending a user outside the repository."""

from __future__ import annotations

import os
import re
import subprocess

from conftest import REPO, openrecipes

LOG = REPO / "runs/qwen3-8b-h200x2-openrecipes-fsdp2-compile-noac-mb1/train.log"
PAGES = [REPO / "README.md", REPO / "CONTRIBUTING.md", *sorted((REPO / "docs").glob("*.md"))]


def test_measure_without_a_recipe_says_what_the_dashes_need():
    done = openrecipes("measure", LOG, "--window", "5", "19")
    assert done.returncode == 0, done.stderr
    assert "needs the recipe (GPU count, batch, row tokens, price); add --recipe RECIPE.yaml" in done.stdout
    with_recipe = openrecipes("measure", LOG, "--recipe", REPO / "recipes/qwen3-8b/h200/"
                              "openrecipes-fsdp2-compile-noac-mb1.yaml")
    assert "add --recipe" not in with_recipe.stdout


def test_what_the_documented_commands_write_is_ignored_by_git():
    paths = ["demo/llama3/rows.parquet", "tok/qwen3/tokenizer.json", "._site.lock", ".data/qwen3-rows/rows.parquet",
             "_site/index.html", ".whl/torchtitan-0.2.2-py3-none-any.whl"]
    done = subprocess.run(["git", "check-ignore", "--no-index", *paths], cwd=REPO, capture_output=True, text=True)
    assert sorted(done.stdout.split()) == sorted(paths)


def test_no_page_points_outside_the_repository():
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        # a link is read from the page's folder; a path in a command, from the repository root the commands run in
        for link, target in re.findall(r"(\]\()?(?<![\w/.])(\.\./[^\s)`'\"]+)", text):
            resolved = os.path.normpath((page.parent if link else REPO) / target)
            assert resolved.startswith(str(REPO) + os.sep), f"{page.name}: {target}"
        assert "/work/" not in text and "shared/tools" not in text, page.name


def test_the_gpu_wheel_list_is_the_projects_own_script():
    script = REPO / "scripts/gpu-wheels.sh"
    assert os.access(script, os.X_OK)
    assert "torchtitan==0.2.2" in script.read_text()
    assert "scripts/gpu-wheels.sh" in (REPO / "docs/running.md").read_text()
