"""Chat formats: each renders one conversation as parts (text or special token) with a supervised flag.

The token-level rule of each format is written out in data/README.md. Text between two special tokens is
tokenized as one string (as a chat template's output is), and a token is supervised when any character it covers
is; special tokens are looked up by id, so special-token text inside message content stays ordinary text.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import NamedTuple

ROLES = ("system", "user", "assistant")


class Part(NamedTuple):  # a NamedTuple, not a dataclass: millions are made per build
    text: str
    supervised: bool
    special: bool = False


@cache  # a few distinct specials, made once each rather than for every conversation
def _special(token: str, supervised: bool = False) -> Part:
    return Part(token, supervised, special=True)


def render_gpt_oss(messages: list[dict], eos: str) -> list[Part]:
    """Harmony, as openai-harmony's render_conversation_for_training writes it; assistant turns on channel final."""
    parts: list[Part] = []
    for index, message in enumerate(messages):
        role, content = message["role"], message["content"]
        parts += [_special("<|start|>"), Part(role, False)]
        if role == "assistant":
            closing = "<|return|>" if index == len(messages) - 1 else "<|end|>"
            parts += [_special("<|channel|>"), Part("final", False), _special("<|message|>"),
                      Part(content, True), _special(closing, True)]
        else:
            parts += [_special("<|message|>"), Part(content, False), _special("<|end|>")]
    return parts + [_special(eos)]


def _qwen3_last_query_index(messages: list[dict]) -> int:
    for index in range(len(messages) - 1, -1, -1):
        content = messages[index]["content"]
        if messages[index]["role"] == "user" and not (
                content.startswith("<tool_response>") and content.endswith("</tool_response>")):
            return index
    return len(messages) - 1


def render_qwen3(messages: list[dict], eos: str) -> list[Part]:
    """Qwen3's official chat template for text conversations: assistant turns after the last user query carry a
    (possibly empty) <think> block, which is prompt, not target."""
    last_query = _qwen3_last_query_index(messages)
    parts: list[Part] = []
    for index, message in enumerate(messages):
        role, content = message["role"], message["content"]
        parts.append(_special("<|im_start|>"))
        if role != "assistant":
            parts += [Part(f"{role}\n{content}", False), _special("<|im_end|>"), Part("\n", False)]
            continue
        reasoning = ""
        if "</think>" in content:
            reasoning = content.split("</think>")[0].rstrip("\n").split("<think>")[-1].lstrip("\n")
            content = content.split("</think>")[-1].lstrip("\n")
        if index > last_query and (index == len(messages) - 1 or reasoning):
            header = f"assistant\n<think>\n{reasoning.strip(chr(10))}\n</think>\n\n"
            content = content.lstrip("\n")
        else:
            header = "assistant\n"
        parts += [Part(header, False), Part(content, True), _special("<|im_end|>", True), Part("\n", False)]
    return parts + [_special(eos)]


def render_chatml(messages: list[dict], eos: str) -> list[Part]:
    """Plain ChatML: <|im_start|>role\\ncontent<|im_end|>\\n for every message."""
    parts: list[Part] = []
    for message in messages:
        supervised = message["role"] == "assistant"
        parts += [_special("<|im_start|>"), Part(f"{message['role']}\n", False), Part(message["content"], supervised),
                  _special("<|im_end|>", supervised), Part("\n", False)]
    return parts + [_special(eos)]


def render_glm5(messages: list[dict], eos: str) -> list[Part]:
    """GLM-4.5/5's template shape; GLM has no end-of-turn token, so the token after an assistant turn (the next
    role token, or the EOS between conversations) is supervised as its end."""
    parts: list[Part] = [_special("[gMASK]"), _special("<sop>")]
    after_assistant = False
    for message in messages:
        role, content = message["role"], message["content"]
        parts.append(_special(f"<|{role}|>", after_assistant))
        if role == "assistant":
            parts.append(Part("\n<think></think>", False))
            if content.strip():
                parts += [Part("\n", False), Part(content.strip(), True)]
        else:
            parts.append(Part(f"\n{content}", False))
        after_assistant = role == "assistant"
    return parts + [_special(eos, after_assistant)]


# Llama 3.1's template writes this system header into every conversation, with or without a system message: the
# knowledge cutoff and the date it prints when the caller passes no date_string (apply_chat_template's default).
LLAMA3_SYSTEM_HEADER = "\n\nCutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n"


def render_llama3(messages: list[dict], eos: str) -> list[Part]:
    """Llama 3.1's chat template for text conversations: <|begin_of_text|>, the system header (with the first
    message's text when it is a system message), then <|start_header_id|>role<|end_header_id|>\\n\\n{content,
    trimmed}<|eot_id|> per message. Supervised: assistant content and its <|eot_id|>."""
    parts = [_special("<|begin_of_text|>"), _special("<|start_header_id|>"), Part("system", False),
             _special("<|end_header_id|>")]
    system = ""
    if messages[0]["role"] == "system":
        system, messages = messages[0]["content"].strip(), messages[1:]
    parts += [Part(LLAMA3_SYSTEM_HEADER + system, False), _special("<|eot_id|>")]
    for message in messages:
        supervised = message["role"] == "assistant"
        parts += [_special("<|start_header_id|>"), Part(message["role"], False), _special("<|end_header_id|>"),
                  Part("\n\n", False), Part(message["content"].strip(), supervised), _special("<|eot_id|>", supervised)]
    return parts + [_special(eos)]


RENDERERS: dict[str, Callable[[list[dict], str], list[Part]]] = {
    "gpt_oss": render_gpt_oss, "glm5": render_glm5, "qwen3": render_qwen3, "chatml": render_chatml,
    "llama3": render_llama3}
# The special tokens each format writes; a tokenizer without them is the wrong tokenizer for the format.
FORMAT_SPECIALS = {
    "gpt_oss": ("<|start|>", "<|channel|>", "<|message|>", "<|end|>", "<|return|>"),
    "glm5": ("[gMASK]", "<sop>", "<|system|>", "<|user|>", "<|assistant|>"),
    "qwen3": ("<|im_start|>", "<|im_end|>"),
    "chatml": ("<|im_start|>", "<|im_end|>"),
    "llama3": ("<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"),
}
DEFAULT_EOS = {"gpt_oss": "<|endoftext|>", "glm5": "<|endoftext|>", "qwen3": "<|endoftext|>",
               "chatml": "<|endoftext|>", "llama3": "<|end_of_text|>"}
CHAT_FORMATS = (*RENDERERS, "template")
