"""One name for each thing: a model (its card's name or its file name), a GPU type, a chat format and a tokenizer
family are accepted in any case and with `-` or `_`, and every command shows the one spelling its table writes."""

from __future__ import annotations

import pytest
from conftest import openrecipes

from openrecipes.catalog.hardware import load_reference_tables
from openrecipes.catalog.names import gpu_name, model_name
from openrecipes.errors import UserError
from openrecipes.names import canonical


@pytest.mark.parametrize("typed, card", [
    ("glm-5.2-744b-a40b", "GLM-5.2-744B-A40B"), ("GLM_5.2_744B_A40B", "GLM-5.2-744B-A40B"), ("Qwen3-8B", "qwen3-8b"),
    ("GPT_OSS-20B", "gpt-oss-20b")])
def test_a_model_is_found_by_any_spelling_of_its_name_or_file(typed, card):
    assert model_name(typed, load_reference_tables()) == card


def test_gpu_types_and_formats_resolve_to_their_tables_spelling():
    tables = load_reference_tables()
    assert gpu_name("h200", tables) == "H200"
    assert canonical("GPT-OSS", ["gpt_oss", "qwen3"], "chat format", "docs/rows.md") == "gpt_oss"


def test_an_unknown_name_lists_the_known_ones():
    with pytest.raises(UserError, match=r"unknown model 'qwen3-1-7b'; known: .*qwen3-1\.7b"):
        model_name("qwen3-1-7b", load_reference_tables())  # dots stay: 1.7b is not 1-7b


def test_plan_takes_the_cards_file_name_and_a_lower_case_gpu():
    done = openrecipes("plan", "QWEN3_8B", "--gpu", "h200", "--gpus", "2", "--engine", "torchtitan", "--top", "1")
    assert done.returncode == 0, done.stderr
    assert "qwen3-8b on 2 x H200" in done.stdout  # shown in the tables' spelling


def test_rows_and_tokenizer_take_either_spelling(tmp_path):
    done = openrecipes("tokenizer", "export", "GPT_OSS", "--out", tmp_path / "tok", "--help")
    assert done.returncode == 0, done.stderr
    bad = openrecipes("rows", "demo", "--chat-format", "nope", "--out", tmp_path / "x")
    assert bad.returncode == 2 and "known: chatml, glm5, gpt_oss" in bad.stderr
    from openrecipes.rows.cli import _check_family, _check_format

    assert _check_format("GPT-OSS") == "gpt_oss" and _check_family("gpt_oss") == "gpt-oss"
