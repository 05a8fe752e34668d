"""The one in-place YAML editor (openrecipes.yamledit): each catalog file written back with its own values is the
same bytes, a changed value changes only its lines, and a layout it cannot edit is a one-line UserError."""

from __future__ import annotations

import shutil

import pytest
import yaml
from conftest import GPTOSS_1, REPO

from openrecipes.errors import UserError
from openrecipes.measure.result import inputs_from_recipe, measure, read_run
from openrecipes.measure.write import write_result
from openrecipes.plan.constants import HERE
from openrecipes.yamledit import append_item, set_fields

RECIPES = sorted((REPO / "recipes").rglob("*.yaml"))
SLIME_GPTOSS_1 = REPO / "tests/fixtures/logs/slime-gpt-oss-20b-attune-tp1-pp1-ep4.log"


def _own_texts(text: str, *path: str) -> dict[tuple[str, ...], str | list[str]]:
    """Every value of the mapping at `path` that is a scalar or a list of scalars, as its text is written, read by
    PyYAML's own marks (not ruamel's) so that the editor is checked against another parser."""
    node = yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    for name in path:
        node = next(value for key, value in node.value if key.value == name)
    own: dict[tuple[str, ...], str | list[str]] = {}
    for key, value in node.value:
        cut = lambda scalar: text[scalar.start_mark.index:scalar.end_mark.index]  # noqa: E731
        if isinstance(value, yaml.ScalarNode) and value.style != "|":
            own[(*path, key.value)] = cut(value)
        elif isinstance(value, yaml.SequenceNode) and all(isinstance(item, yaml.ScalarNode) for item in value.value):
            own[(*path, key.value)] = [cut(item) for item in value.value]
    return own


def test_every_recipe_written_back_with_its_own_result_values_is_the_same_bytes():
    changed = []
    for recipe in RECIPES:
        text = recipe.read_text(encoding="utf-8")
        own = _own_texts(text, "result")
        assert ("result", "tokens_per_s_per_gpu") in own, recipe
        if set_fields(text, own, str(recipe), "fix") != text:
            changed.append(str(recipe.relative_to(REPO)))
    assert len(RECIPES) >= 400 and changed == []


def test_calibration_written_back_with_its_own_values_is_the_same_bytes():
    text = (HERE / "calibration.yaml").read_text(encoding="utf-8")
    own = {field: value for entry in yaml.safe_load(text)["fitted"] for field, value in
           _own_texts(text, "fitted", entry).items()}
    assert len(own) > 40 and set_fields(text, own, "calibration.yaml", "fix") == text


def _changed(text: str, **values: str | list[str]) -> str:
    return set_fields(text, {("result", name): value for name, value in values.items()}, "r.yaml", "fix it")


def test_a_changed_value_changes_only_its_lines():
    # A block list's items are written anew: a comment after an item goes with it (no catalog file has one).
    text = ("a: 1\nresult:\n  mfu: 0.1  # published\n  flow: [0, 3]  # kept\n  block:  # on the key\n  - 5\n"
            "  - 19  # last step\n  # about the note\n  note: >-\n    folded\n    words\n# about next\nnext: 2\n")
    assert _changed(text, mfu="0.25", flow=["1", "2"], block=["6", "20"], added="3.0") == (
        "a: 1\nresult:\n  mfu: 0.25  # published\n  flow: [1, 2]  # kept\n  block:  # on the key\n  - 6\n"
        "  - 20\n  # about the note\n  note: >-\n    folded\n    words\n  added: 3.0\n"
        "# about next\nnext: 2\n")
    assert _changed(text, note="x") == text.replace("note: >-\n    folded\n    words\n", "note: x\n")


def test_fields_after_a_nested_mapping_or_at_the_end_without_a_line_break():
    text = "result:\n    active:\n        count: 1\n    window:\n    - 5\n    - 9"
    assert _changed(text, window=["1", "2", "3"], gpu_hours="0.5") == (
        "result:\n    active:\n        count: 1\n    window:\n    - 1\n    - 2\n    - 3\n    gpu_hours: 0.5\n")
    assert _changed("result:\n  a: null\n  b:\n  c: ~\n", b="1", a="2") == "result:\n  a: 2\n  b: 1\n  c: ~\n"


SHAPE = "cannot set result.mfu in place: 'result' must be a block of `key: value` lines"
HOLDS = "and mfu not a mapping"


@pytest.mark.parametrize("text, problem", [
    ("result: [1, 2]\n", SHAPE), ("result: 3\n", SHAPE), ("result:\n", SHAPE), ("result: {mfu: 1}\n", SHAPE),
    ("result:\n  mfu:\n    value: 1\n", HOLDS),
    ("other: 1\n", SHAPE), ("- 1\n", SHAPE),
    ("result:\n  mfu: 1\n  mfu: 2\n", "line 3: found duplicate key \"mfu\""),
    ("result:\n  mfu: [1\n", "line 3"),
])
def test_a_layout_the_editor_cannot_handle_is_one_line_naming_file_field_and_fix(text, problem):
    with pytest.raises(UserError) as raised:
        _changed(text, mfu="0.5")
    message = str(raised.value)
    assert message.startswith("r.yaml: ") and problem in message and message.endswith("; fix it")
    assert "\n" not in message


def test_measure_write_refuses_a_result_it_cannot_edit_and_leaves_the_recipe(tmp_path):
    recipe = tmp_path / "recipe.yaml"
    shutil.copy(GPTOSS_1, recipe)
    result = measure(read_run([SLIME_GPTOSS_1]), inputs_from_recipe(recipe), None)
    hostile = GPTOSS_1.read_text().replace("result:\n", "result:\n  mfu: 0.1\n", 1)
    recipe.write_text(hostile)
    with pytest.raises(UserError, match=rf"^{recipe}: line \d+: found duplicate key \"mfu\".*edit its result block"):
        write_result(recipe, result)
    assert recipe.read_text() == hostile


ITEM = "- by: someone\n  tokens_per_s_per_gpu: 1.5\n"


@pytest.mark.parametrize(("text", "expected"), [
    # the item goes last in the list, before the blank lines after it
    ("a: 1\nreproductions:\n- by: x\n  tokens_per_s_per_gpu: 2.0\n\n\nz: 2\n",
     f"a: 1\nreproductions:\n- by: x\n  tokens_per_s_per_gpu: 2.0\n{ITEM}\n\nz: 2\n"),
    # an absent list is added at the end of its mapping
    ("a: 1  # kept\n", f"a: 1  # kept\nreproductions:\n{ITEM}"),
    # a file whose last line has no line break
    ("a: 1", f"a: 1\nreproductions:\n{ITEM}"),
    # a key with nothing after it (null) takes the item
    ("reproductions:\nb: 2\n", f"reproductions:\n{ITEM}b: 2\n"),
])
def test_an_item_is_appended_and_every_other_byte_kept(text, expected):
    assert append_item(text, ("reproductions",), ITEM, "r.yaml", "edit it by hand") == expected


@pytest.mark.parametrize("text", ["reproductions: []\n", "reproductions: 3\n", "reproductions: {a: 1}\n",
                                  "- a\n- b\n", "a: 1\na: 2\n", "a: [1\n"])
def test_a_list_it_cannot_append_to_is_one_line_naming_the_file(text):
    with pytest.raises(UserError) as error:
        append_item(text, ("reproductions",), ITEM, "r.yaml", "edit it by hand")
    assert str(error.value).startswith("r.yaml") and "\n" not in str(error.value)
