"""`rows build --chat-format template` renders a stranger's chat template within a time, a loop and an output limit,
in Jinja's sandbox: a template that loops for ever, multiplies a string past memory, escapes the sandbox or simply
fails is one line naming the template (and the limit), exit 2, never a traceback or a hang; so is a malformed
tokenizer.json."""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path

import pytest
from conftest import openrecipes

FIXTURES = Path(__file__).parent / "fixtures" / "rows"
MARKED = ("{% for m in messages %}{{ m.role }}: {% if m.role == 'assistant' %}{% generation %}{{ m.content }}"
          "{% endgeneration %}{% else %}{{ m.content }}{% endif %}\n{% endfor %}")
HOSTILE = {
    "nested loops": ("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
                     "loop limit of 100,000"),
    "string product": ("{{ 'x' * 10**10 }}", "output limit"),
    "doubling": ("{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
                 "output limit"),
    "wide filter": ("{{ 'x'|center(10**10) }}", "output limit"),
    "wide format": ("{{ '%999999999d'|format(1) }}", "output limit"),
    "squared replace": ("{% set s = 'a' * 1000000 %}{{ s|replace('a', s) }}", "output limit"),
    "exponential macro": ("{% macro f(n) %}{% if n > 0 %}{{ f(n-1) }}{{ f(n-1) }}{% endif %}{% endmacro %}{{ f(60) }}",
                          "time limit of 5 s"),
    "endless recursion": ("{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}", "recursion"),
    "sandbox escape": ("{{ ''.__class__.__mro__[1].__subclasses__() }}", "unsafe"),
    "raise_exception": ("{{ raise_exception('no system messages') }}", "no system messages"),
    "division by zero": ("{{ 1 // 0 }}", "division"),
    "syntax error": ("{% for %}", "chat_template line 1"),
    "undefined call": ("{{ nothing() }}", "chat_template failed"),
}


def _tokenizer(qwen3: Path, folder: Path, template: str) -> Path:
    folder.mkdir()
    shutil.copy(qwen3 / "tokenizer.json", folder)
    config = json.loads((qwen3 / "tokenizer_config.json").read_text())
    (folder / "tokenizer_config.json").write_text(json.dumps({**config, "chat_template": template}))
    return folder


def _build(tokenizer: Path, out: Path):
    return openrecipes("rows", "build", "--conversations", FIXTURES / "conversations.jsonl", "--tokenizer", tokenizer,
                       "--chat-format", "template", "--rows", "1", "--row-tokens", "64", "--seed", "1", "--out", out,
                       "--workers", "0")


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_template_is_one_line_naming_the_template_and_the_limit(qwen3, tmp_path, case):
    template, phrase = HOSTILE[case]
    tokenizer = _tokenizer(qwen3, tmp_path / "tok", template + MARKED)
    started = time.monotonic()
    result = _build(tokenizer, tmp_path / "out")
    assert time.monotonic() - started < 30
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr[-2000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "tokenizer_config.json: chat_template" in lines[0] and phrase in lines[0], lines
    assert not (tmp_path / "out" / "rows.parquet").exists()


def test_a_template_within_the_limits_builds(qwen3, tmp_path):
    result = _build(_tokenizer(qwen3, tmp_path / "tok", MARKED), tmp_path / "out")
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("text", ['{"version": "1.0", "model": 5}', "{not json", "[]",
                                  '{"added_tokens": [{"id": "x"}]}'])
def test_a_malformed_tokenizer_json_is_one_line(qwen3, tmp_path, text):
    tokenizer = _tokenizer(qwen3, tmp_path / "tok", MARKED)
    (tokenizer / "tokenizer.json").write_text(text)
    result = _build(tokenizer, tmp_path / "out")
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr[-2000:]
    assert result.stderr.strip().count("\n") == 0 and "not a Hugging Face tokenizer" in result.stderr


@pytest.mark.slow
def test_the_template_corpus_keeps_the_contract(qwen3, tmp_path):
    """tests/fuzz/names_bounds_cases.py's chat templates and tokenizer.json files, through the fuzz runner with 4 GiB
    (transformers' import alone maps more than the corpus's 1 GiB): exit 0, 1 or 2 in one line, within 30 s."""
    sys.path.insert(0, str(Path(__file__).parent / "fuzz"))
    from cases import _Scratch
    from names_bounds_cases import template_cases
    from run import run_cases

    outcomes = run_cases(template_cases(_Scratch(tmp_path), qwen3), workers=2, memory_bytes=4 * 2**30)
    assert len(outcomes) >= 70
    assert not [(o.case.id, o.problems, o.stderr[-300:]) for o in outcomes.values() if o.problems]
