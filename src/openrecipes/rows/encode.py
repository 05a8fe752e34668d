"""Turn raw conversation records into (input_ids, loss_mask) arrays; runs inside the worker processes.

A record that cannot become a training conversation is not an error: it comes back as the reason it was skipped.
"""

from __future__ import annotations

import datetime
import json
import re
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from openrecipes.errors import UserError
from openrecipes.rows.encoders import Encoder, PartsEncoder, tokenizer_json_path
from openrecipes.rows.formats import DEFAULT_EOS, ROLES
from openrecipes.rows.quicktok_encode import QuicktokEncoder, bundled_family, check_format_tokens
from openrecipes.rows.template_sandbox import BoundedTemplate
from openrecipes.textfile import MIB, json_depth, read_bytes

# Templates that print today's date through strftime_now (Llama 3.2's) get this one, so a build is reproducible.
# date_string is left to the template: Llama 3.1's prints its own default (26 Jul 2024), as the llama3 format does.
FIXED_DATE = datetime.datetime(2026, 1, 1)
# a chat template that marks assistant content, which transformers needs to return the assistant mask
GENERATION_TAG = re.compile(r"\{%-?\s*generation\s*-?%\}")
# A tokenizer_config.json holds the chat template and the added tokens: a few hundred KB for the largest vocabularies.
MAX_TOKENIZER_CONFIG_BYTES = 16 * MIB
MAX_TOKENIZER_CONFIG_DEPTH = 32


def parse_record(raw: bytes | list | None) -> list[dict] | str:
    """The messages of one record (a JSONL line as bytes, or a parquet `messages` value), or why it is skipped."""
    if isinstance(raw, bytes):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            return "not_utf8"
        try:
            record = json.loads(text)
        except (ValueError, RecursionError):  # not JSON, nested past the parser's depth, or a number too long to read
            return "broken_json"
        if not isinstance(record, dict):
            return "broken_json"
        raw = record.get("messages")
    if not isinstance(raw, list) or not raw:
        return "missing_messages"
    messages = []
    for message in raw:
        if not isinstance(message, dict):
            return "broken_message"
        role, content = message.get("role"), message.get("content")
        if role is None:
            return "missing_role"
        if role not in ROLES:
            return "unknown_role"
        if not isinstance(content, str):
            return "non_string_content"
        if not content.strip():
            return "empty_content"
        if not content.isascii() and not _utf8(content):
            return "not_utf8"
        messages.append({"role": role, "content": content})
    if not any(message["role"] == "assistant" for message in messages):
        return "no_assistant_turn"
    return messages


def _utf8(text: str) -> bool:
    """False for text holding half a character: JSON can escape a lone surrogate ("\\ud800"), UTF-8 cannot hold one."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def eos_token_for(tokenizer: Path, chat_format: str, eos_token: str | None) -> str:
    """The EOS between conversations: --eos-token, else the format's end-of-text, else tokenizer_config's eos."""
    if eos_token:
        return eos_token
    if chat_format in DEFAULT_EOS:
        return DEFAULT_EOS[chat_format]
    config_path = tokenizer_json_path(tokenizer).with_name("tokenizer_config.json")
    config = read_tokenizer_config(config_path) if config_path.exists() or config_path.is_symlink() else {}
    eos = config.get("eos_token")
    eos = eos.get("content") if isinstance(eos, dict) else eos
    if not eos or not isinstance(eos, str):
        raise UserError(f"{config_path}: eos_token: not set; pass --eos-token with the tokenizer's end-of-text token")
    return eos


def read_tokenizer_config(path: Path) -> dict:
    text = read_bytes(path, MAX_TOKENIZER_CONFIG_BYTES, "tokenizer_config.json")
    if json_depth(text.decode("utf-8", "replace")) > MAX_TOKENIZER_CONFIG_DEPTH:
        raise UserError(f"{path}: nested deeper than {MAX_TOKENIZER_CONFIG_DEPTH} levels; not a tokenizer_config.json")
    try:
        config = json.loads(text.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise UserError(f"{path}: not UTF-8 (byte {error.start}); save it as UTF-8 JSON") from None
    except json.JSONDecodeError as error:
        raise UserError(f"{path}: line {error.lineno}: not JSON ({error.msg}); fix the file or re-export the "
                        "tokenizer") from None
    if not isinstance(config, dict):
        raise UserError(f"{path}: not a JSON object; a tokenizer_config.json holds {{\"eos_token\": ...}}")
    return config


class TemplateEncoder(Encoder):
    """Any Hugging Face chat template with {% generation %} markers, through apply_chat_template."""

    def __init__(self, tokenizer: Path, eos: str):
        directory = tokenizer if tokenizer.is_dir() else tokenizer.parent
        config = directory / "tokenizer_config.json"
        if config.exists() or config.is_symlink():  # a FIFO or device is refused here, before transformers opens it
            read_tokenizer_config(config)  # a broken file: one line, not a traceback
        from transformers import AutoTokenizer  # after the cheap checks: importing it takes seconds

        try:
            self.tokenizer = AutoTokenizer.from_pretrained(str(directory))
        except Exception as error:  # noqa: BLE001 - tokenizers raises a bare Exception for a malformed tokenizer.json
            reason = " ".join(str(error).split())[:200]
            raise UserError(f"{directory}: not a Hugging Face tokenizer directory ({reason}); pass one with "
                            "tokenizer.json and tokenizer_config.json") from None
        if not self.tokenizer.chat_template:
            raise UserError(f"{directory}: tokenizer_config.json: no chat_template; --chat-format template needs one")
        if not GENERATION_TAG.search(str(self.tokenizer.chat_template)):  # told here, not by a library warning
            raise UserError(f"{directory}: tokenizer_config.json: chat_template has no {{% generation %}} block, so "
                            "no assistant mask can be read; wrap assistant content in {% generation %} ... "
                            "{% endgeneration %}")
        self.template = BoundedTemplate(str(self.tokenizer.chat_template), f"{config}", FIXED_DATE.strftime)
        eos_id = self.tokenizer.convert_tokens_to_ids(eos)
        if not isinstance(eos_id, int):  # a tokenizer without an unknown token has no id for a token it lacks
            raise UserError(f"{directory}: no {eos} token; pass --eos-token with the tokenizer's end-of-text token")
        self.eos_id = eos_id
        self.directory = directory

    def encode_stream(self, conversations: list[list[dict]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        ids: list[int] = []
        mask: list[int] = []
        lengths = []
        for messages in conversations:
            # Rendered within limits first; transformers' render of the same template and messages does the same work.
            self.template.check({**self.tokenizer.special_tokens_map, "messages": messages, "tools": None,
                                 "documents": None, "add_generation_prompt": False})
            try:
                out = self.tokenizer.apply_chat_template(
                    messages, tokenize=True, return_dict=True, return_assistant_tokens_mask=True,
                    strftime_now=FIXED_DATE.strftime)
            except Exception as error:  # noqa: BLE001 - whatever the template raises inside transformers
                raise UserError(f"{self.directory / 'tokenizer_config.json'}: chat_template failed: "
                                f"{' '.join(str(error).split())[:200]}; fix the template") from None
            assert isinstance(out, Mapping), "return_dict=True returns a BatchEncoding"
            conversation_ids: list[int] = out["input_ids"]
            conversation_mask: list[int] = out["assistant_masks"]
            if not any(conversation_mask):
                raise UserError(f"{self.directory}: chat_template: the assistant mask is all zero; the template "
                                "needs {% generation %} ... {% endgeneration %} around assistant content")
            ids += [*conversation_ids, self.eos_id]
            mask += [*conversation_mask, 0]
            lengths.append(len(conversation_ids) + 1)
        return np.array(ids, np.int32), np.array(mask, np.uint8), np.array(lengths, np.int64)


def check_bundled_tokens(tokenizer: Path, chat_format: str, eos: str) -> None:
    """A tokenizer `tokenizer export` wrote has the format's tokens (checked in milliseconds, before a build starts
    its workers); any other tokenizer is checked where it is loaded."""
    family = bundled_family(tokenizer_json_path(tokenizer)) if chat_format != "template" else None
    if family:
        check_format_tokens(tokenizer, family, chat_format, eos)


def make_encoder(tokenizer: Path, chat_format: str, eos: str) -> Encoder:
    """quicktok for a coded format on a tokenizer `tokenizer export` wrote; the Hugging Face tokenizer otherwise."""
    if chat_format == "template":
        return TemplateEncoder(tokenizer, eos)
    family = bundled_family(tokenizer_json_path(tokenizer))
    if family:
        return QuicktokEncoder(tokenizer, family, chat_format, eos)
    return PartsEncoder(tokenizer, chat_format, eos)
