"""Chat formats and their token-level loss masks, proven against the reference renderers."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from openrecipes.rows.encode import TemplateEncoder
from openrecipes.rows.encoders import PartsEncoder
from openrecipes.rows.formats import FORMAT_SPECIALS
from openrecipes.rows.vocab_export import VOCABS, build_tokenizer, read_ranks, read_specials

FIXTURES = Path(__file__).parent / "fixtures" / "rows"
CONVERSATIONS = [json.loads(line)["messages"] for line in (FIXTURES / "conversations.jsonl").read_text().splitlines()]

# The qwen3 format's mask as {% generation %} markers on Qwen3's template, to check the qwen3 format against
# apply_chat_template through `--chat-format template` (benchmarks/rows_build.py's naive arm reads it too).
QWEN3_GENERATION_TEMPLATE = (FIXTURES / "qwen3-generation.jinja").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def glm_standin(exports) -> Path:
    """A STAND-IN for GLM's tokenizer, which is not obtainable offline: Qwen3's byte-level ranks cut to GLM-4.5's
    151,329 regular tokens, plus GLM's special tokens at GLM-4.5's real ids (zai-org tokenizer_config.json). Built
    by the exporter's own code, so it is kept with the exports."""
    def write(directory: Path) -> dict:
        specials = {151329: "<|endoftext|>", 151330: "[MASK]", 151331: "[gMASK]", 151332: "[sMASK]", 151333: "<sop>",
                    151334: "<eop>", 151335: "<|system|>", 151336: "<|user|>", 151337: "<|assistant|>",
                    151338: "<|observation|>"}
        tokenizer = build_tokenizer(read_ranks(VOCABS["qwen3"])[:151329], specials, VOCABS["qwen3"].pattern)
        directory.mkdir(parents=True)
        tokenizer.save(str(directory / "tokenizer.json"))
        return {}

    return Path(exports.written("glm-standin", write)["out"])


@pytest.fixture(scope="module")
def glm5_encoder(glm_standin) -> PartsEncoder:
    return PartsEncoder(glm_standin, "glm5", "<|endoftext|>")


def _pieces(encoder: PartsEncoder, messages: list[dict]) -> list[tuple[str, int]]:
    ids, mask = encoder.encode([messages])[0]
    return [(encoder.tokenizer.decode([int(token)], skip_special_tokens=False), int(flag))
            for token, flag in zip(ids, mask, strict=False)]


def test_gpt_oss_equals_openai_harmony_on_every_bundled_conversation(exports, monkeypatch):
    monkeypatch.setenv("TIKTOKEN_ENCODINGS_BASE", str(exports["gpt-oss"]))
    from openai_harmony import Conversation, HarmonyEncodingName, Message, Role, load_harmony_encoding

    harmony = load_harmony_encoding(HarmonyEncodingName.HARMONY_GPT_OSS)
    encoder = exports.parts_encoder("gpt-oss", "gpt_oss", "<|endoftext|>")
    for messages, (ids, mask) in zip(CONVERSATIONS, encoder.encode(CONVERSATIONS), strict=False):
        reference = harmony.render_conversation_for_training(Conversation.from_messages([
            Message.from_role_and_content(Role(m["role"]), m["content"]).with_channel("final")
            if m["role"] == "assistant" else Message.from_role_and_content(Role(m["role"]), m["content"])
            for m in messages]))
        assert ids[:-1].tolist() == reference
        assert ids[-1] == 199999 and mask[-1] == 0  # <|endoftext|> between conversations, not a target
        # supervised: after <|start|>assistant<|channel|>final<|message|> through <|end|>/<|return|>
        expected, inside = [], False
        for token in ids[:-1].tolist():
            expected.append(int(inside))
            if token == 200008 and expected[-4:-1] and _previous_role(ids, len(expected) - 1) == "assistant":
                inside = True
            if token in (200007, 200002):
                inside = False
        assert mask[:-1].tolist() == expected


def _previous_role(ids: np.ndarray, message_index: int) -> str:
    start = max(i for i in range(message_index) if ids[i] == 200006)
    return "assistant" if ids[start + 1] == 173781 else "other"


def test_gpt_oss_mask_token_by_token(exports):
    encoder = exports.parts_encoder("gpt-oss", "gpt_oss", "<|endoftext|>")
    assert _pieces(encoder, [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Yo."},
                             {"role": "user", "content": "Bye"}, {"role": "assistant", "content": "Ok"}]) == [
        ("<|start|>", 0), ("user", 0), ("<|message|>", 0), ("Hi", 0), ("<|end|>", 0),
        ("<|start|>", 0), ("assistant", 0), ("<|channel|>", 0), ("final", 0), ("<|message|>", 0),
        ("Yo", 1), (".", 1), ("<|end|>", 1),
        ("<|start|>", 0), ("user", 0), ("<|message|>", 0), ("Bye", 0), ("<|end|>", 0),
        ("<|start|>", 0), ("assistant", 0), ("<|channel|>", 0), ("final", 0), ("<|message|>", 0),
        ("Ok", 1), ("<|return|>", 1), ("<|endoftext|>", 0)]


@pytest.mark.slow  # transformers and two more tokenizer loads; the quick loop pins test_qwen3_mask_token_by_token
def test_qwen3_equals_the_official_template_and_generation_masks(exports, tmp_path):
    official = exports.auto_tokenizer("qwen3")
    marked = tmp_path / "qwen3-marked"
    marked.mkdir()
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (marked / name).write_bytes((exports["qwen3"] / name).read_bytes())
    config = json.loads((marked / "tokenizer_config.json").read_text())
    (marked / "tokenizer_config.json").write_text(json.dumps({**config, "chat_template": QWEN3_GENERATION_TEMPLATE}))
    encoder = exports.parts_encoder("qwen3", "qwen3", "<|endoftext|>")
    template = TemplateEncoder(marked, "<|endoftext|>")
    plain = [m for m in CONVERSATIONS if not any("<|" in message["content"] for message in m)]
    for messages, (ids, mask), (template_ids, template_mask) in zip(
            plain, encoder.encode(plain), template.encode(plain), strict=False):
        assert ids[:-1].tolist() == official.apply_chat_template(messages, tokenize=True, return_dict=True)["input_ids"]
        assert ids.tolist() == template_ids.tolist()
        assert mask.tolist() == template_mask.tolist()


def test_qwen3_mask_token_by_token(exports):
    encoder = exports.parts_encoder("qwen3", "qwen3", "<|endoftext|>")
    assert _pieces(encoder, [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Yo"}]) == [
        ("<|im_start|>", 0), ("user", 0), ("\n", 0), ("Hi", 0), ("<|im_end|>", 0), ("\n", 0),
        ("<|im_start|>", 0), ("assistant", 0), ("\n", 0), ("<think>", 0), ("\n\n", 0), ("</think>", 0), ("\n\n", 0),
        ("Yo", 1), ("<|im_end|>", 1), ("\n", 0), ("<|endoftext|>", 0)]


def _llama3_generation_template(template: str) -> str:
    """Llama 3.1's template with {% generation %} around assistant content and its <|eot_id|> (the llama3 mask)."""
    line = ("{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim "
            "+ '<|eot_id|>' }}")
    marked = ("{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' }}"
              "{%- if message.role == 'assistant' %}{%- generation %}{{- message['content'] | trim + '<|eot_id|>' }}"
              "{%- endgeneration %}{%- else %}{{- message['content'] | trim + '<|eot_id|>' }}{%- endif %}")
    assert template.count(line) == 1
    return template.replace(line, marked)


def _assert_llama3_equals_the_official_template(exports, conversations: list[list[dict]]) -> None:
    official = exports.auto_tokenizer("llama3")
    marked = _llama3_generation_template(official.chat_template)
    encoder = exports.parts_encoder("llama3", "llama3", "<|end_of_text|>")
    for messages, (ids, mask) in zip(conversations, encoder.encode(conversations), strict=True):
        # apply_chat_template as people call it: no date passed, so the template prints its default date
        assert ids[:-1].tolist() == official.apply_chat_template(messages, tokenize=True, return_dict=True)["input_ids"]
        reference = official.apply_chat_template(messages, chat_template=marked, tokenize=True, return_dict=True,
                                                 return_assistant_tokens_mask=True)
        assert mask[:-1].tolist() == reference["assistant_masks"]
        assert ids[-1] == 128001 and mask[-1] == 0  # <|end_of_text|> between conversations, not a target


@pytest.mark.slow  # transformers and every corpus dialog; the quick loop pins test_llama3_mask_token_by_token_...
def test_llama3_equals_the_official_template_and_its_mask_on_every_bundled_conversation(exports):
    from openrecipes.rows.demo import corpus_dialogs

    _assert_llama3_equals_the_official_template(exports, CONVERSATIONS + corpus_dialogs())
    # plain text through transformers, as people tokenize it, starts with <|begin_of_text|>
    assert exports.auto_tokenizer("llama3")("Hello world")["input_ids"] == [128000, 9906, 1917]


def test_llama3_mask_token_by_token_with_the_templates_system_header(exports):
    encoder = exports.parts_encoder("llama3", "llama3", "<|end_of_text|>")
    header = [("<|begin_of_text|>", 0), ("<|start_header_id|>", 0), ("system", 0), ("<|end_header_id|>", 0),
              ("\n\n", 0), ("Cut", 0), ("ting", 0), (" Knowledge", 0), (" Date", 0), (":", 0), (" December", 0),
              (" ", 0), ("202", 0), ("3", 0), ("\n", 0), ("Today", 0), (" Date", 0), (":", 0), (" ", 0), ("26", 0),
              (" Jul", 0), (" ", 0), ("202", 0), ("4", 0), ("\n\n", 0)]
    turns = [("<|start_header_id|>", 0), ("user", 0), ("<|end_header_id|>", 0), ("\n\n", 0), ("Hi", 0),
             ("<|eot_id|>", 0), ("<|start_header_id|>", 0), ("assistant", 0), ("<|end_header_id|>", 0), ("\n\n", 0),
             ("Yo", 1), ("<|eot_id|>", 1), ("<|end_of_text|>", 0)]
    # without a system message the header is still written, empty after the date, as the template does
    assert _pieces(encoder, [{"role": "user", "content": " Hi\n"}, {"role": "assistant", "content": "Yo "}]) == [
        *header, ("<|eot_id|>", 0), *turns]
    # a first system message goes into that header, trimmed
    assert _pieces(encoder, [{"role": "system", "content": " S "}, {"role": "user", "content": "Hi"},
                             {"role": "assistant", "content": "Yo"}]) == [*header, ("S", 0), ("<|eot_id|>", 0), *turns]


# ChatML as Hugging Face chat templates write it, with {% generation %} around what the chatml format supervises.
CHATML_GENERATION_TEMPLATE = (
    "{%- for message in messages %}{{- '<|im_start|>' + message['role'] + '\\n' }}"
    "{%- if message['role'] == 'assistant' %}{%- generation %}{{- message['content'] + '<|im_end|>' }}"
    "{%- endgeneration %}{%- else %}{{- message['content'] + '<|im_end|>' }}{%- endif %}{{- '\\n' }}{%- endfor %}")


@pytest.mark.slow  # transformers and its tokenizer load; the quick loop pins test_chatml_mask_token_by_token
def test_chatml_equals_the_chatml_template_and_its_mask(exports):
    official = exports.auto_tokenizer("qwen3")
    encoder = exports.parts_encoder("qwen3", "chatml", "<|endoftext|>")
    plain = [m for m in CONVERSATIONS if not any("<|" in message["content"] for message in m)]
    for messages, (ids, mask) in zip(plain, encoder.encode(plain), strict=False):
        reference = official.apply_chat_template(messages, chat_template=CHATML_GENERATION_TEMPLATE, tokenize=True,
                                                 return_dict=True, return_assistant_tokens_mask=True)
        assert ids[:-1].tolist() == reference["input_ids"] and mask[:-1].tolist() == reference["assistant_masks"]


def test_chatml_mask_token_by_token(exports):
    encoder = exports.parts_encoder("qwen3", "chatml", "<|endoftext|>")
    assert _pieces(encoder, [{"role": "system", "content": "S"}, {"role": "assistant", "content": "Yo"}]) == [
        ("<|im_start|>", 0), ("system", 0), ("\n", 0), ("S", 0), ("<|im_end|>", 0), ("\n", 0),
        ("<|im_start|>", 0), ("assistant", 0), ("\n", 0), ("Yo", 1), ("<|im_end|>", 1), ("\n", 0),
        ("<|endoftext|>", 0)]


def test_glm5_supervises_content_and_the_token_that_ends_the_turn(glm5_encoder):
    encoder = glm5_encoder
    messages = [{"role": "system", "content": "S"}, {"role": "user", "content": "Hi"},
                {"role": "assistant", "content": " Yo "}, {"role": "user", "content": "Bye"},
                {"role": "assistant", "content": "Ok"}]
    ids, _ = encoder.encode([messages])[0]
    assert ids[:3].tolist() == [151331, 151333, 151335]  # [gMASK] <sop> <|system|> at GLM's real ids
    # the stand-in's truncated vocabulary splits "<think>" and "Bye"; the mask rule is what is under test
    assert _pieces(encoder, messages) == [
        ("[gMASK]", 0), ("<sop>", 0), ("<|system|>", 0), ("\n", 0), ("S", 0), ("<|user|>", 0), ("\n", 0), ("Hi", 0),
        ("<|assistant|>", 0), ("\n", 0), ("<th", 0), ("ink", 0), ("></", 0), ("think", 0), (">\n", 0), ("Yo", 1),
        ("<|user|>", 1), ("\n", 0), ("By", 0), ("e", 0),
        ("<|assistant|>", 0), ("\n", 0), ("<th", 0), ("ink", 0), ("></", 0), ("think", 0), (">\n", 0), ("Ok", 1),
        ("<|endoftext|>", 1)]


@pytest.mark.parametrize("family, chat_format, eos", [("gpt-oss", "gpt_oss", "<|endoftext|>"),
                                                     ("qwen3", "qwen3", "<|endoftext|>"),
                                                     ("qwen3", "chatml", "<|endoftext|>"),
                                                     ("llama3", "llama3", "<|end_of_text|>")])
def test_one_string_per_conversation_gives_the_reference_tokens_and_masks(exports, family, chat_format, eos):
    encoder = exports.parts_encoder(family, chat_format, eos)
    assert encoder.joined
    parts = [encoder.render(messages, encoder.eos) for messages in CONVERSATIONS]
    plain = [p for p, messages in zip(parts, CONVERSATIONS, strict=True)
             if not any("<|" in m["content"] for m in messages)]
    for joined, reference in zip(encoder._encode_joined(plain), encoder._encode_runs(plain), strict=False):
        assert joined.tolist() == reference.tolist()
    # the format's own special-token text inside content would become a special token: that batch takes the
    # reference path
    lookalike = [{"role": "user", "content": f"Is {FORMAT_SPECIALS[chat_format][-1]} special?"},
                 {"role": "assistant", "content": "Not here."}]
    conversations = [*CONVERSATIONS, lookalike]
    parts = [encoder.render(messages, encoder.eos) for messages in conversations]
    assert encoder._encode_joined(parts) is None
    for streamed, reference in zip(encoder.encode_stream(conversations), encoder._encode_runs(parts), strict=False):
        assert streamed.tolist() == reference.tolist()


def test_glm5_one_string_per_conversation_gives_the_reference_tokens(glm5_encoder):
    encoder = glm5_encoder
    parts = [encoder.render(messages, encoder.eos) for messages in CONVERSATIONS[:5]]
    assert encoder.joined
    for joined, reference in zip(encoder._encode_joined(parts), encoder._encode_runs(parts), strict=False):
        assert joined.tolist() == reference.tolist()


@pytest.mark.parametrize("strip", ["lstrip", "rstrip", None])
def test_specials_that_strip_around_them_take_the_reference_path(tmp_path, strip):
    # Qwen3's format on a vocabulary of its 256 byte tokens and its special tokens (renumbered after them): a
    # special that strips whitespace around it would not cut the joined string where the reference places it
    names = [name for _, name in sorted(read_specials(VOCABS["qwen3"]).items())]
    tokenizer = build_tokenizer(read_ranks(VOCABS["qwen3"])[:256], dict(enumerate(names, start=256)),
                                VOCABS["qwen3"].pattern)
    data = json.loads(tokenizer.to_str())
    for token in data["added_tokens"]:
        token[strip or "lstrip"] = strip is not None and token["content"] == "<|im_end|>"
    (tmp_path / "tokenizer.json").write_text(json.dumps(data))
    assert PartsEncoder(tmp_path, "qwen3", "<|endoftext|>").joined == (strip is None)
