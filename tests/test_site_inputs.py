"""What a recipe page tells a reader before running: notes in a safe Markdown subset, the inputs its command needs,
the board's own rows and run commands, and where the repository links point."""

from __future__ import annotations

import re

import pytest
from markupsafe import Markup
from site_helpers import REPO

from openrecipes.catalog.command import command_inputs
from openrecipes.catalog.store import load_catalog
from openrecipes.errors import UserError
from openrecipes.site import notes
from openrecipes.site.before_run import UNEXPLAINED, run_inputs
from openrecipes.site.running import running_steps
from openrecipes.site.settings import read_repository


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(REPO)


def _link(path: str) -> str | None:
    return f"/files/{path}" if path.startswith("recipes/") else None


def test_notes_render_lists_code_and_repository_links_and_escape_the_rest():
    html = notes.render("First <b>line</b>\nsame paragraph with `code<x>`.\n\n- one recipes/a/b/c.yaml\n"
                        "- two\n  continued [the file](recipes/x.yaml) [evil](javascript:alert(1))", _link)
    assert isinstance(html, Markup)
    assert html == ('<p>First &lt;b&gt;line&lt;/b&gt; same paragraph with <code>code&lt;x&gt;</code>.</p>\n'
                    '<ul><li>one <a href="/files/recipes/a/b/c.yaml">recipes/a/b/c.yaml</a></li>'
                    '<li>two continued <a href="/files/recipes/x.yaml">the file</a> evil</li></ul>')


def test_a_note_cannot_smuggle_markup_through_a_link_or_code_span():
    html = notes.render('`recipes/"><script>x</script>` [<img src=x onerror=1>](recipes/a.yaml)', _link)
    assert "<script" not in html and "<img" not in html and "onerror=1>" not in html.replace("&lt;", "")


def test_our_recipes_notes_speak_to_users(catalog):
    ours = [e for e in catalog.recipes if e.path.as_posix().startswith(("recipes/qwen3-", "recipes/llama-"))]
    assert ours
    for entry in ours:
        text = entry.entry.notes or ""
        assert not re.search(r"\bissue \d|\btarget \d|\bmissed\b", text, re.I), entry.slug
        assert text.startswith("- "), entry.slug  # a list, not one long paragraph


def test_command_inputs_are_found_in_the_command():
    found = command_inputs('MODEL_ARGS=(\n  --layers 2\n)\nexport A=1 B=$([ "$LINKS" -gt 0 ] && echo 1)\n'
                           'python3 -m <entry module> ${MODEL_ARGS[@]} ${EXTRA[@]} --ckpt "$CKPT" --a $A \\\n'
                           '  --data ${DATA}  # a comment with $NOT_READ\n')
    assert found.variables == ["LINKS", "CKPT", "DATA"]
    assert found.arrays == ["EXTRA"]
    assert found.placeholders == ["<entry module>"]
    assert found.exports == {"A": "1", "B": '$([ "$LINKS" -gt 0 ] && echo 1)'}


def test_every_input_of_the_bundled_commands_is_explained(catalog):
    gptoss = {i.shown: i for i in run_inputs(catalog, catalog.find("attune-tp1-pp1-ep4"))}
    assert {"$HF_CKPT", "$TORCH_DIST", "$SFT_DATA", "<slime entry module>"} <= set(gptoss)
    assert "rows/gptoss-tulu3-fixed8192-v1/rows.parquet" in gptoss["$SFT_DATA"].set_to
    assert gptoss["$TORCH_DIST"].source == "checkpoint conversion"
    glm = {i.shown for i in run_inputs(catalog, catalog.find("attune-tp4-pp2-cp8"))}
    assert {"${MODEL_ARGS[@]}", "$NVLINK_COUNT", "train_async.py"} <= glm
    for entry in catalog.recipes:
        assert all(i.set_to != UNEXPLAINED for i in run_inputs(catalog, entry)), entry.slug


def test_running_steps_use_the_recipes_own_format_rows_and_paths(catalog):
    gptoss = running_steps(catalog.find("attune-tp1-pp1-ep4"))
    assert "--chat-format gpt_oss" in gptoss.rows_command and "--rows 6400" in gptoss.rows_command
    assert gptoss.tokenizer_command == "openrecipes tokenizer export gpt-oss --out tok/gpt-oss"
    assert not gptoss.runs_here
    qwen = running_steps(catalog.find("openrecipes-compile-noac-mb4"))
    assert qwen.rows_command == "openrecipes rows demo --out .data/qwen3-rows --chat-format qwen3 --rows 320 --seed 42"
    assert qwen.runs_here and qwen.entry.path.as_posix() == "recipes/qwen3-1.7b/h200/openrecipes-compile-noac-mb4.yaml"
    glm = running_steps(catalog.find("attune-tp4-pp2-cp8"))
    assert "--chat-format glm5" in glm.rows_command and "--rows 12800" in glm.rows_command
    assert glm.tokenizer_command is None and "TOKENIZER_DIR" in glm.rows_command


def test_site_yaml_sets_or_hides_the_repository(tmp_path):
    assert read_repository(tmp_path) is None  # no site.yaml: no repository link, never a file:// address
    (tmp_path / "site.yaml").write_text("repository: .\n")
    with pytest.raises(UserError, match="site.yaml: repository: '.' is not an https address"):
        read_repository(tmp_path)  # a served site cannot open a folder's file:// address
    (tmp_path / "site.yaml").write_text("repository: none\n")
    assert read_repository(tmp_path) is None
    (tmp_path / "site.yaml").write_text("repository: https://github.com/o/r/\nfiles: https://github.com/o/r/blob/main/{path}\n")
    repo = read_repository(tmp_path)
    assert repo.url == "https://github.com/o/r" and repo.file("recipes/a b.yaml") == \
        "https://github.com/o/r/blob/main/recipes/a%20b.yaml"
    (tmp_path / "site.yaml").write_text("repository: https://github.com/o/r\n")  # pinned: {commit} by default
    assert read_repository(tmp_path).file("recipes/a.yaml", 3) == "https://github.com/o/r/blob/main/recipes/a.yaml#L3"
    assert read_repository(REPO).files.startswith(f"https://github.com/openrecipes/openrecipes/blob/{_head()}/")
    (tmp_path / "site.yaml").write_text("repository: javascript:alert(1)\n")
    with pytest.raises(UserError, match="site.yaml: repository"):
        read_repository(tmp_path)


def _head() -> str:
    import subprocess

    return subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
