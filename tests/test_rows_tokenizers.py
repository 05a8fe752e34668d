"""`openrecipes tokenizer export`: the rebuilt vocabularies are the official ones and encode like them."""

from __future__ import annotations

import hashlib
import json

import pytest
import quicktok

from openrecipes.errors import UserError
from openrecipes.rows import vocab_export
from openrecipes.rows.vocab_export import O200K_BASE_SHA256, export_tokenizer

TEXTS = ["Hello, world!", "def f(x):\n    return [i**2 for i in range(100)]  # 1+2+3==6", "café résumé — Zürich",
         "日本語のトークナイザー 中文 한국어", "emoji \U0001f680\U0001f525 mixed", "   leading\n\ttabs  \r\n x \r\n",
         "don't I'll 'TWAS 3.14159 0xDEADBEEF", "\n\n\nfoo  bar\n"]


@pytest.mark.parametrize("family, encoding, specials", [
    ("gpt-oss", "o200k_base", {"<|endoftext|>": 199999, "<|return|>": 200002, "<|start|>": 200006,
                               "<|end|>": 200007, "<|message|>": 200008, "<|call|>": 200012}),
    ("qwen3", "qwen3", {"<|endoftext|>": 151643, "<|im_start|>": 151644, "<|im_end|>": 151645, "<think>": 151667}),
    ("llama3", "llama3", {"<|begin_of_text|>": 128000, "<|end_of_text|>": 128001, "<|finetune_right_pad_id|>": 128004,
                          "<|start_header_id|>": 128006, "<|eom_id|>": 128008, "<|eot_id|>": 128009,
                          "<|python_tag|>": 128010, "<|reserved_special_token_3|>": 128011,
                          "<|reserved_special_token_247|>": 128255}),
])
def test_export_encodes_like_the_reference_encoder(exports, family, encoding, specials):
    tokenizer = exports.tokenizer(family)
    tokenizer.encode_special_tokens = False
    reference = quicktok.get_encoding(encoding)
    for text in TEXTS:
        assert tokenizer.encode(text, add_special_tokens=False).ids == list(reference.encode(text))
    assert {token: tokenizer.token_to_id(token) for token in specials} == specials


def test_gpt_oss_export_writes_the_official_o200k_base_rank_file(exports):
    assert hashlib.sha256((exports["gpt-oss"] / "o200k_base.tiktoken").read_bytes()).hexdigest() == O200K_BASE_SHA256


def test_qwen3_export_carries_the_chat_template(exports):
    config = json.loads((exports["qwen3"] / "tokenizer_config.json").read_text())
    assert config["eos_token"] == "<|im_end|>" and "last_query_index" in config["chat_template"]


def test_llama3_export_is_llama_3_1s_tokenizer(exports):
    config = json.loads((exports["llama3"] / "tokenizer_config.json").read_text())
    assert config["bos_token"] == "<|begin_of_text|>" and config["eos_token"] == "<|eot_id|>"
    assert "Cutting Knowledge Date: December 2023" in config["chat_template"]
    # BOS first, from tokenizer.json's own post-processor (transformers' AutoTokenizer is checked under slow)
    assert exports.tokenizer("llama3").encode("Hello world").ids == [128000, 9906, 1917]


def test_a_vocabulary_that_is_not_the_official_one_is_refused(tmp_path, monkeypatch):
    ranks = vocab_export.read_ranks(vocab_export.VOCABS["llama3"])
    monkeypatch.setattr(vocab_export, "read_ranks", lambda spec: [ranks[1], ranks[0], *ranks[2:]])
    with pytest.raises(UserError, match="is not the official 82e9d319"):
        export_tokenizer("llama3", tmp_path)
    assert not (tmp_path / "tokenizer.json").exists()


@pytest.mark.slow  # the quick loop has test_exports_are_the_tokenizers_quicktok_stands_for: each export's pinned sha256
def test_export_is_byte_identical_twice(exports, tmp_path):
    # the session's export is the first; this one, in a fresh folder, the second
    again = export_tokenizer("qwen3", tmp_path)
    assert again["tokenizer_json_sha256"] == exports.result("qwen3")["tokenizer_json_sha256"]
    assert (tmp_path / "tokenizer.json").read_bytes() == (exports["qwen3"] / "tokenizer.json").read_bytes()
