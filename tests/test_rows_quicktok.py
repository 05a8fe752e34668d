"""quicktok's batch encoder gives the reference tokens and masks on every bundled vocabulary."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest
import quicktok
from conftest import examples
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from openrecipes.catalog.model import Recipe
from openrecipes.catalog.rows_build import to_build
from openrecipes.catalog.store import load_catalog
from openrecipes.rows.build import BuildRequest, build_rows
from openrecipes.rows.demo import CORPUS, corpus_dialogs, write_tulu_jsonl
from openrecipes.rows.encode import make_encoder
from openrecipes.rows.encoders import PartsEncoder
from openrecipes.rows.manifest import DemoCorpus
from openrecipes.rows.quicktok_encode import EXPORTED_TOKENIZER_JSON, QuicktokEncoder
from openrecipes.rows.vocab_export import VOCABS

REPO = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).parent / "fixtures" / "rows"
CONVERSATIONS = [json.loads(line)["messages"] for line in (FIXTURES / "conversations.jsonl").read_text().splitlines()]
# (family, chat format, EOS): every coded format on a vocabulary quicktok bundles
BUNDLED = [("gpt-oss", "gpt_oss", "<|endoftext|>"), ("qwen3", "qwen3", "<|endoftext|>"),
           ("qwen3", "chatml", "<|endoftext|>"), ("llama3", "llama3", "<|end_of_text|>")]


@pytest.fixture(scope="module")
def exported(exports) -> dict[str, dict]:
    return {family: {**exports.result(family), "dir": exports[family]} for family in ("gpt-oss", "qwen3", "llama3")}


_ENCODERS: dict = {}
_quicktok = functools.cache(quicktok.get_encoding)  # 30 ms a call, and Hypothesis calls the test many times


def _encoders(exports, family, chat_format, eos) -> tuple[QuicktokEncoder, PartsEncoder]:
    """Loaded once per format: Hypothesis calls a test many times with one fixture."""
    directory = exports[family]
    if (directory, chat_format) not in _ENCODERS:
        fast = make_encoder(directory, chat_format, eos)
        assert isinstance(fast, QuicktokEncoder)
        _ENCODERS[directory, chat_format] = fast, exports.parts_encoder(family, chat_format, eos)
    return _ENCODERS[directory, chat_format]


def _assert_same_as_reference(fast: QuicktokEncoder, reference: PartsEncoder, conversations) -> None:
    expected = reference._encode_runs([reference.render(messages, reference.eos) for messages in conversations])
    for got, want in zip(fast.encode_stream(conversations), expected, strict=True):
        assert got.tolist() == want.tolist()


def test_exports_are_the_tokenizers_quicktok_stands_for(exported):
    assert {EXPORTED_TOKENIZER_JSON.get(result["tokenizer_json_sha256"]) for result in exported.values()} == {
        "gpt-oss", "qwen3", "llama3"}


@pytest.mark.parametrize("family, chat_format, eos", BUNDLED)
def test_quicktok_equals_the_reference_on_every_bundled_conversation(exports, family, chat_format, eos):
    lookalikes = [[{"role": "user", "content": f"Is {token} special? <think>no</think>"},
                   {"role": "assistant", "content": f"<think>\nhm\n</think>\n\n{token} is text here."}]
                  for token in ("<|im_end|>", "<|end|>", "<|eot_id|>", "<|endoftext|>", "<|start_header_id|>")]
    _assert_same_as_reference(*_encoders(exports, family, chat_format, eos),
                              CONVERSATIONS + corpus_dialogs() + lookalikes)


@pytest.mark.parametrize("family, chat_format, eos", BUNDLED)
def test_text_that_nfc_would_change_is_encoded_as_the_hugging_face_tokenizer_does(exports, family, chat_format, eos):
    # quicktok normalizes to NFC, these tokenizers do not: a decomposed accent and a CJK compatibility ideograph
    # (found by the fuzz test) keep their own tokens, in a batch beside ordinary text.
    conversations = [[{"role": "user", "content": text}, {"role": "assistant", "content": f"so: {text}"}]
                     for text in ("cafe\u0301 au lait", "\ufa2a", "plain words")]
    _assert_same_as_reference(*_encoders(exports, family, chat_format, eos), conversations)


def test_a_tokenizer_that_is_not_an_export_keeps_the_hugging_face_encoder(exported, tmp_path):
    tokenizer = (exported["qwen3"]["dir"] / "tokenizer.json").read_bytes()
    (tmp_path / "tokenizer.json").write_bytes(tokenizer + b"\n")  # same tokenizer, other bytes
    assert type(make_encoder(tmp_path, "qwen3", "<|endoftext|>")) is PartsEncoder


EMOJI = "\U0001f680\U0001f525\U0001f44b\U0001f3fd\u200d\u2764\ufe0f\U0001f1ef\U0001f1f5"
SPECIAL_LOOKALIKES = ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|end_of_text|>", "<|eot_id|>", "<|start|>",
                      "<|message|>", "<|return|>", "<|begin_of_text|>", "<|reserved_special_token_7|>", "<think>",
                      "</think>", "<tool_call>", "<|im_", "|>", "<|", "< |im_end| >", "<|IM_END|>"]
CODE = ["def f(x):\n    return x ** 2\n", "for (int i = 0; i < n; ++i) { a[i] += 1; }", "\tif x:\r\n\t\tpass",
        "SELECT * FROM t WHERE id = 42;", "<div class=\"a\">&amp;</div>", "$ ls -la | grep '.py'"]
PIECES = st.one_of(
    st.text(max_size=40),
    st.from_regex(r"[ \t\n\r\x0b\x0c\u00a0\u2003\u3000]{1,12}", fullmatch=True),
    st.from_regex(r"[0-9]{1,30}([.,][0-9]{1,9})?", fullmatch=True),
    st.text(alphabet=EMOJI, min_size=1, max_size=8),
    st.sampled_from(CODE),
    st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=200, max_size=2000),  # very long words
    st.text(alphabet="日本語のトークナイザー中文한국어éèüß", min_size=1, max_size=30),
    st.sampled_from(SPECIAL_LOOKALIKES),
)
CONTENT = st.lists(PIECES, min_size=1, max_size=6).map("".join).filter(lambda text: text.strip())
ROLE = st.sampled_from(["system", "user", "assistant"])
CONVERSATION = st.lists(st.tuples(ROLE, CONTENT), min_size=1, max_size=4).map(
    lambda turns: [{"role": role, "content": content} for role, content in turns] + [
        {"role": "assistant", "content": "ok"}])


@pytest.mark.parametrize("family, chat_format, eos", BUNDLED)
@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(conversations=st.lists(CONVERSATION, min_size=1, max_size=3))
def test_quicktok_equals_the_reference_on_fuzzed_conversations(exports, family, chat_format, eos, conversations):
    _assert_same_as_reference(*_encoders(exports, family, chat_format, eos), conversations)


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.lists(PIECES, min_size=1, max_size=8).map("".join))
def test_quicktok_ids_equal_the_hugging_face_tokenizers_on_fuzzed_text(exports, text):
    # Qwen3's <think>, <tool_call>, ... are matched inside text by the Hugging Face tokenizer; the encoder cuts runs
    # there itself (covered by the conversation fuzz above), so plain text without them is compared here.
    assume(not any(token in text for token in VOCABS["qwen3"].non_special))
    for family, encoding in (("gpt-oss", "o200k_harmony"), ("qwen3", "qwen3"), ("llama3", "llama3")):
        tokenizer = exports.tokenizer(family)
        tokenizer.encode_special_tokens = True  # special-token text is ordinary text, as in message content
        assert list(_quicktok(encoding).encode_ordinary(text)) == tokenizer.encode(
            text, add_special_tokens=False).ids


@pytest.mark.slow
def test_the_catalogs_qwen3_demo_rows_keep_their_published_build(exported, tmp_path):
    """Every recipe whose rows can be rebuilt here (the demo corpus ones) pins rows_sha256 and its build block."""
    published = {}
    for entry in load_catalog(REPO).entries:
        dataset = entry.entry.workload.dataset if isinstance(entry.entry, Recipe) else None  # summaries have none
        if dataset and dataset.source.startswith("chatterbot") and "--chat-format qwen3" in dataset.build.builder:
            assert dataset.build.builder.endswith("--chat-format qwen3 --rows 320 --seed 42")
            published[dataset.rows_sha256, dataset.build.model_dump_json(exclude={"tokenizer"})] = dataset.build
    assert len(published) == 1
    [(rows_sha256, _)], [build] = published.keys(), published.values()
    dialogs = corpus_dialogs()
    epochs = 34
    conversations = tmp_path / "conversations.jsonl"
    write_tulu_jsonl(dialogs, epochs, conversations)
    manifest = build_rows(BuildRequest(conversations, exported["qwen3"]["dir"], "qwen3", 8192, 320, 42,
                                       tmp_path / "out", workers=2, name="qwen3-chatterbot-demo-fixed8192",
                                       source_dataset=CORPUS,
                                       demo=DemoCorpus(corpus=CORPUS, dialogs_per_epoch=len(dialogs), epochs=epochs)))
    assert manifest.rows_sha256 == rows_sha256
    rebuilt = to_build(manifest, build.builder)
    assert rebuilt.model_dump(exclude={"tokenizer"}) == build.model_dump(exclude={"tokenizer"})
    assert manifest.tokenizer.tokenizer_json_sha256 in build.tokenizer
