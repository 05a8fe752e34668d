"""Turn raw conversation records into (input_ids, loss_mask) arrays; runs inside the worker processes.

A record that cannot become a training conversation is not an error: it comes back as the reason it was skipped.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import numpy as np

from openrecipes.errors import UserError
from openrecipes.rows.formats import DEFAULT_EOS, FORMAT_SPECIALS, RENDERERS, ROLES, Part

# Templates that print today's date (Llama 3's date_string, strftime_now) get this one, so a build is reproducible.
FIXED_DATE = datetime.datetime(2026, 1, 1)


def parse_record(raw: bytes | list | None) -> list[dict] | str:
    """The messages of one record (a JSONL line as bytes, or a parquet `messages` value), or why it is skipped."""
    if isinstance(raw, bytes):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            return "not_utf8"
        try:
            record = json.loads(text)
        except json.JSONDecodeError:
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
        messages.append({"role": role, "content": content})
    if not any(message["role"] == "assistant" for message in messages):
        return "no_assistant_turn"
    return messages


def tokenizer_json_path(tokenizer: Path) -> Path:
    path = tokenizer / "tokenizer.json" if tokenizer.is_dir() else tokenizer
    if not path.is_file():
        raise UserError(f"{tokenizer}: no tokenizer.json; pass a Hugging Face tokenizer directory "
                        "(`openrecipes tokenizer export gpt-oss --out DIR` writes one)")
    return path


def eos_token_for(tokenizer: Path, chat_format: str, eos_token: str | None) -> str:
    """The EOS between conversations: --eos-token, else the format's end-of-text, else tokenizer_config's eos."""
    if eos_token:
        return eos_token
    if chat_format in DEFAULT_EOS:
        return DEFAULT_EOS[chat_format]
    config_path = tokenizer_json_path(tokenizer).with_name("tokenizer_config.json")
    eos = json.loads(config_path.read_text()).get("eos_token") if config_path.is_file() else None
    eos = eos.get("content") if isinstance(eos, dict) else eos
    if not eos:
        raise UserError(f"{config_path}: eos_token: not set; pass --eos-token with the tokenizer's end-of-text token")
    return eos


class PartsEncoder:
    """Encodes conversations in one of the coded formats with a `tokenizers` tokenizer.json."""

    def __init__(self, tokenizer: Path, chat_format: str, eos: str):
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_file(str(tokenizer_json_path(tokenizer)))
        # Special tokens come only from the format, by id; their text inside content is ordinary text.
        self.tokenizer.encode_special_tokens = True
        self.render = RENDERERS[chat_format]
        self.eos = eos
        self.special_ids = {}
        for token in (*FORMAT_SPECIALS[chat_format], eos, *_role_tokens(chat_format)):
            token_id = self.tokenizer.token_to_id(token)
            if token_id is None:
                raise UserError(f"{tokenizer}: tokenizer.json: no {token} token; --chat-format {chat_format} "
                                f"needs its model's tokenizer")
            self.special_ids[token] = token_id

    def encode(self, conversations: list[list[dict]]) -> list[tuple[np.ndarray, np.ndarray]]:
        runs_per_conversation = [_runs(self.render(messages, self.eos)) for messages in conversations]
        texts = [run[0] for runs in runs_per_conversation for run in runs if not isinstance(run, Part)]
        encodings = iter(self.tokenizer.encode_batch(texts, add_special_tokens=False)) if texts else iter(())
        encoded = []
        for runs in runs_per_conversation:
            ids: list[int] = []
            mask: list[int] = []
            for run in runs:
                if isinstance(run, Part):
                    ids.append(self.special_ids[run.text])
                    mask.append(run.supervised)
                    continue
                encoding = next(encodings)
                ids += encoding.ids
                mask += _token_mask(run[1], encoding.offsets, len(encoding.ids))
            encoded.append((np.asarray(ids, np.int32), np.asarray(mask, np.uint8)))
        return encoded


def _role_tokens(chat_format: str) -> tuple[str, ...]:
    return tuple(f"<|{role}|>" for role in ROLES) if chat_format == "glm5" else ()


def _runs(parts: list[Part]) -> list[Part | tuple[str, list[tuple[int, bool]]]]:
    """Specials stay as parts; adjacent text parts join into (text, [(length, supervised), ...])."""
    runs: list = []
    for part in parts:
        if part.special:
            runs.append(part)
            continue
        if not runs or isinstance(runs[-1], Part):
            runs.append(["", []])
        runs[-1][0] += part.text
        runs[-1][1].append((len(part.text), part.supervised))
    return [run if isinstance(run, Part) else tuple(run) for run in runs]


def _token_mask(spans: list[tuple[int, bool]], offsets: list[tuple[int, int]], count: int) -> list[int]:
    """A token is supervised when any character it covers is (the rule of transformers' assistant masks)."""
    if len({supervised for _, supervised in spans}) == 1:
        return [int(spans[0][1])] * count
    char_mask = np.repeat(np.array([s for _, s in spans], np.int64), [length for length, _ in spans])
    covered = np.concatenate([[0], np.cumsum(char_mask)])
    bounds = np.asarray(offsets, np.int64).reshape(-1, 2)
    return (covered[bounds[:, 1]] - covered[bounds[:, 0]] > 0).astype(np.uint8).tolist()


class TemplateEncoder:
    """Any Hugging Face chat template with {% generation %} markers, through apply_chat_template."""

    def __init__(self, tokenizer: Path, eos: str):
        from transformers import AutoTokenizer

        directory = tokenizer if tokenizer.is_dir() else tokenizer.parent
        self.tokenizer = AutoTokenizer.from_pretrained(str(directory))
        if not self.tokenizer.chat_template:
            raise UserError(f"{directory}: tokenizer_config.json: no chat_template; --chat-format template needs one")
        self.eos_id = self.tokenizer.convert_tokens_to_ids(eos)
        self.directory = directory

    def encode(self, conversations: list[list[dict]]) -> list[tuple[np.ndarray, np.ndarray]]:
        encoded = []
        for messages in conversations:
            out = self.tokenizer.apply_chat_template(
                messages, tokenize=True, return_dict=True, return_assistant_tokens_mask=True,
                date_string=FIXED_DATE.strftime("%d %b %Y"), strftime_now=FIXED_DATE.strftime)
            mask = np.asarray(out["assistant_masks"], np.uint8)
            if not mask.any():
                raise UserError(f"{self.directory}: chat_template: the assistant mask is all zero; the template "
                                "needs {% generation %} ... {% endgeneration %} around assistant content")
            encoded.append((np.append(np.asarray(out["input_ids"], np.int32), np.int32(self.eos_id)),
                            np.append(mask, np.uint8(0))))
        return encoded


def make_encoder(tokenizer: Path, chat_format: str, eos: str) -> PartsEncoder | TemplateEncoder:
    return TemplateEncoder(tokenizer, eos) if chat_format == "template" else PartsEncoder(tokenizer, chat_format, eos)
