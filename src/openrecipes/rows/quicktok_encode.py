"""The coded formats on a vocabulary quicktok-v1 bundles: its batch encoder instead of the Hugging Face tokenizer.

Same rule as the reference encoding (encoders.PartsEncoder._encode_runs): each run of text between two special
tokens is tokenized on its own, as ordinary text, and special tokens are placed by id. quicktok returns no character
offsets, so a token's place in the text is read off the byte length of each token: a token is supervised when any
byte it covers is (the same as any character, since a byte belongs to one character). Only a tokenizer.json that
`openrecipes tokenizer export` wrote, byte for byte, takes this path: its vocabulary is quicktok's, and the tests
check the two encoders give the same ids on every bundled conversation and on fuzzed text.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from pathlib import Path
from typing import Any

import numpy as np

from openrecipes.digest import file_sha256
from openrecipes.errors import UserError
from openrecipes.rows.encoders import Encoder, PartsEncoder, role_tokens
from openrecipes.rows.formats import FORMAT_SPECIALS, RENDERERS
from openrecipes.rows.vocab_export import VOCABS, read_specials

# sha256 of the tokenizer.json each family's export writes (tests/test_rows_tokenizers.py checks they still do).
EXPORTED_TOKENIZER_JSON = {
    "23c0430149a67dce82067cae30051a96b65c6e65a6c6adcb0746d3dd807e15c5": "gpt-oss",
    "851407e427d21f753d37ae52fb004428543323a8a81a6650462f8dc507198af8": "qwen3",
    "cdb599341eb5087cd0aa4f1500ea10905b9ca0a41a11d5665134a81df7de2ba1": "llama3",
}
QUICKTOK_ENCODING = {"gpt-oss": "o200k_harmony", "qwen3": "qwen3", "llama3": "llama3"}


def bundled_family(tokenizer_json: Path) -> str | None:
    """The family whose exported tokenizer.json this file is, byte for byte; None for any other tokenizer."""
    return EXPORTED_TOKENIZER_JSON.get(file_sha256(tokenizer_json))


@functools.cache
def _special_ids(family: str) -> dict[str, int]:
    """The family's special tokens' ids by name, from quicktok's small specials file, read once per process and shared
    by the check and the encoders (read only)."""
    return {name: token_id for token_id, name in read_specials(VOCABS[family]).items()}


def check_format_tokens(tokenizer: Path, family: str, chat_format: str, eos: str) -> None:
    """The format's special tokens and the EOS are among the family's: known without loading the encoding, so a build
    checks them before it starts its workers (each of which would load the encoding to find out)."""
    names = _special_ids(family)
    for token in (*FORMAT_SPECIALS[chat_format], eos, *role_tokens(chat_format)):
        if token not in names:
            raise UserError(f"{tokenizer}: tokenizer.json: no {token} token; --chat-format {chat_format} needs "
                            "its model's tokenizer")


@functools.cache
def _encoding(family: str) -> tuple[Any, np.ndarray]:
    """The family's quicktok encoding and each token's length in bytes, by id: ordinary tokens (ids below the first
    special) as quicktok decodes them, specials by name. Made once per process (60 ms): a process may make several
    encoders of one family (builds run one after another in a notebook or a test session); shared by them, so read
    only."""
    import quicktok

    encoding = quicktok.get_encoding(QUICKTOK_ENCODING[family])
    ids = _special_ids(family)
    ordinary = min(ids.values())
    token_bytes = np.zeros(encoding.n_vocab, np.int64)
    token_bytes[:ordinary] = np.fromiter(map(len, map(encoding.decode_single_token_bytes, range(ordinary))),
                                         np.int64, ordinary)
    for name, token_id in ids.items():
        token_bytes[token_id] = len(name.encode())
    token_bytes.flags.writeable = False
    return encoding, token_bytes


class QuicktokEncoder(Encoder):
    """Conversations in a coded format -> ids and masks, one quicktok batch call per batch of conversations."""

    def __init__(self, tokenizer: Path, family: str, chat_format: str, eos: str):
        spec = VOCABS[family]
        check_format_tokens(tokenizer, family, chat_format, eos)
        self.token_ids = _special_ids(family)
        self.encoding, self.token_bytes = _encoding(family)
        self.render = RENDERERS[chat_format]
        self.eos = eos
        self.tokenizer, self.chat_format = tokenizer, chat_format
        self.reference: Encoder | None = None
        # Added tokens the Hugging Face tokenizer matches even inside text (Qwen3's <think>, ...): runs split there.
        self.always_matched = (re.compile("(" + "|".join(map(re.escape, spec.non_special)) + ")")
                               if spec.non_special else None)

    def encode_stream(self, conversations: list[list[dict]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        runs: list[str] = []  # text between specials, one quicktok document each
        slots: list[int] = []  # the conversation in order: a token id, or -(run number + 1)
        part_bytes: list[int] = []  # every part's UTF-8 length and supervision, specials included, in order
        part_flags: list[bool] = []
        conversation_slots: list[int] = []
        token_ids, split = self.token_ids, self.always_matched
        for messages in conversations:
            first_slot = len(slots)
            run: list[str] = []
            for text, supervised, special in self.render(messages, self.eos):
                part_bytes.append(len(text) if text.isascii() else len(text.encode()))
                part_flags.append(supervised)
                if not special:
                    run.append(text)
                    continue
                if run:
                    _add_run("".join(run), runs, slots, token_ids, split)
                    run = []
                slots.append(token_ids[text])
            if run:
                _add_run("".join(run), runs, slots, token_ids, split)
            conversation_slots.append(len(slots) - first_slot)
        if not all(map(_nfc, runs)):
            return self._reference().encode_stream(conversations)
        tokens, documents = self.encoding.encode_batch(runs, threads=1) if runs else (np.empty(0, np.uint32), [0])
        return self._assemble(np.asarray(slots, np.int64), np.asarray(tokens), np.asarray(documents, np.int64),
                              np.asarray(conversation_slots, np.int64), np.asarray(part_bytes, np.int64),
                              np.asarray(part_flags, bool))

    def _reference(self) -> Encoder:
        """The Hugging Face tokenizer's encoder, for a batch quicktok would read differently."""
        if self.reference is None:
            self.reference = PartsEncoder(self.tokenizer, self.chat_format, self.eos)
        return self.reference

    def _assemble(self, slots, tokens, documents, conversation_slots, part_bytes, part_flags):
        """Interleave placed specials and run tokens; each token's mask from the bytes it covers."""
        is_run = slots < 0
        run_lengths = np.diff(documents)
        slot_lengths = np.ones(len(slots), np.int64)
        slot_lengths[is_run] = run_lengths[-slots[is_run] - 1]
        slot_starts = np.cumsum(slot_lengths) - slot_lengths
        ids = np.empty(int(slot_lengths.sum()), np.int32)
        ids[slot_starts[~is_run]] = slots[~is_run]
        # runs were numbered in slot order, so run r's tokens start where its slot does
        ids[np.repeat(slot_starts[is_run] - documents[:-1], run_lengths) + np.arange(len(tokens))] = tokens
        token_ends = np.cumsum(self.token_bytes[ids])
        part_ends = np.cumsum(part_bytes)
        if len(ids) and token_ends[-1] != part_ends[-1]:
            raise RuntimeError("quicktok's tokens do not cover the rendered text exactly")
        # supervised bytes before each part boundary; a byte offset's count interpolates inside its part
        supervised_before = np.concatenate([[0], np.cumsum(part_bytes * part_flags)])
        part_starts = part_ends - part_bytes

        def supervised_upto(offsets: np.ndarray) -> np.ndarray:
            part = np.minimum(np.searchsorted(part_ends, offsets, "left"), len(part_ends) - 1)
            return supervised_before[part] + (offsets - part_starts[part]) * part_flags[part]

        mask = (supervised_upto(token_ends) - supervised_upto(token_ends - self.token_bytes[ids]) > 0)
        conversation_starts = np.cumsum(conversation_slots) - conversation_slots
        lengths = (np.add.reduceat(slot_lengths, conversation_starts) if len(slots)
                   else np.zeros(len(conversation_slots), np.int64))
        return ids, mask.astype(np.uint8), lengths


def _nfc(text: str) -> bool:
    """quicktok NFC-normalizes its input, the Hugging Face tokenizers these vocabularies come from do not: text that
    NFC changes (a decomposed accent, a CJK compatibility ideograph) must not reach quicktok."""
    return text.isascii() or unicodedata.is_normalized("NFC", text)


def _add_run(text: str, runs: list[str], slots: list[int], token_ids: dict[str, int], split) -> None:
    if split is None or "<" not in text or not split.search(text):
        runs.append(text)
        slots.append(-len(runs))
        return
    for number, piece in enumerate(split.split(text)):  # odd pieces are the matched tokens
        if number % 2:
            slots.append(token_ids[piece])
        elif piece:
            runs.append(piece)
            slots.append(-len(runs))
