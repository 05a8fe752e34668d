"""Encode each distinct conversation once per worker: a repeated conversation reuses its ids and mask.

A conversation's tokens and mask depend on its messages alone (the encoders render and tokenize each one on its
own), so a conversation seen before, with the same roles and texts in the same order, gets the very arrays it got
then: the rows are byte for byte those of encoding it again. Conversations are recognised by their messages'
texts, numbered in a table of the texts seen so far; the table and the encoded conversations are dropped together
when they outgrow their budget, so memory stays bounded on a corpus that never repeats.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from openrecipes.rows.encode import parse_record
from openrecipes.rows.encoders import Encoder

if TYPE_CHECKING:
    import pyarrow as pa

# Kept across batches until either is exceeded, then both start over.
BUDGET_TOKENS = 1 << 22
BUDGET_CHARACTERS = 1 << 25
# Reading a batch through Arrow and keying its conversations costs more than parsing it line by line when few
# conversations repeat (long conversations read by Arrow are no faster than by json.loads): below this share of
# repeats the next PROBE_EVERY batches are parsed line by line, then the memo is tried again.
MIN_REPEATS = 0.5
PROBE_EVERY = 16
# Longer records (bytes on average in a batch) are parsed line by line too: their cost is their text, which Arrow
# reads no faster than json.loads, and the per-record work the memo saves is a small part of it.
MAX_RECORD_BYTES = 2048
_NULL, _NO_MESSAGE = -1, -2  # codes of a missing role or content, and of a message that is not an object


@dataclass
class Encoded:
    """One batch: tokens per record (-1 for a skipped one), why each skipped one was, and all ids and masks."""

    lengths: np.ndarray
    reasons: list[str]
    ids: np.ndarray
    masks: np.ndarray


def mean_record_bytes(records: list[bytes] | pa.Array) -> float:
    return (sum(map(len, records)) if isinstance(records, list) else records.nbytes) / max(1, len(records))


def encode_parsed(encoder: Encoder, parsed: list[list[dict] | str]) -> Encoded:
    """Records already parsed by parse_record (messages, or the reason one is skipped), encoded in one call."""
    kept = [messages for messages in parsed if not isinstance(messages, str)]
    ids, masks, kept_lengths = encoder.encode_stream(kept)
    lengths = np.full(len(parsed), -1, np.int64)
    lengths[[number for number, messages in enumerate(parsed) if not isinstance(messages, str)]] = kept_lengths
    return Encoded(lengths, [messages for messages in parsed if isinstance(messages, str)], ids, masks)


@dataclass
class ConversationMemo:
    encoder: Encoder
    codes: dict[str, int] = field(default_factory=dict)
    characters: int = 0
    conversations: dict[bytes, tuple[np.ndarray, np.ndarray] | str] = field(default_factory=dict)
    tokens: int = 0
    batches_to_skip: int = 0

    def pays(self, record_bytes: float) -> bool:
        """Whether the next batch, of records this long on average, should go through the memo
        (records.arrow_messages, then encode)."""
        if record_bytes > MAX_RECORD_BYTES:
            return False
        if self.batches_to_skip:
            self.batches_to_skip -= 1
            return False
        return True

    def encode(self, messages: pa.Array) -> Encoded:
        """Records as an Arrow list of {role, content} structs (records.arrow_messages)."""
        if self.tokens > BUDGET_TOKENS or self.characters > BUDGET_CHARACTERS:
            self.codes, self.characters, self.conversations, self.tokens = {}, 0, {}, 0
        keys = self._keys(messages)
        first_of_new: dict[bytes, int] = {}  # a new conversation is encoded once, however often the batch holds it
        for number, key in enumerate(keys):
            if key not in self.conversations:
                first_of_new.setdefault(key, number)
        if len(first_of_new) > (1 - MIN_REPEATS) * len(keys):
            self.batches_to_skip = PROBE_EVERY
        if first_of_new:
            self._encode_new(list(first_of_new), messages.take(list(first_of_new.values())))
        found = [self.conversations[key] for key in keys]
        kept = [encoded for encoded in found if not isinstance(encoded, str)]
        lengths = np.array([-1 if isinstance(encoded, str) else len(encoded[0]) for encoded in found], np.int64)
        return Encoded(lengths, [encoded for encoded in found if isinstance(encoded, str)],
                       np.concatenate([ids for ids, _ in kept]) if kept else np.empty(0, np.int32),
                       np.concatenate([mask for _, mask in kept]) if kept else np.empty(0, np.uint8))

    def _encode_new(self, keys: list[bytes], messages: pa.Array) -> None:
        new = encode_parsed(self.encoder, [parse_record(raw) for raw in messages.to_pylist()])
        ends = np.cumsum(np.maximum(new.lengths, 0)).tolist()
        reasons = iter(new.reasons)
        for key, length, end in zip(keys, new.lengths.tolist(), ends, strict=True):
            self.conversations[key] = (next(reasons) if length < 0
                                       else (new.ids[end - length:end].copy(), new.masks[end - length:end].copy()))
            self.tokens += max(length, 0)

    def _keys(self, messages: pa.Array) -> list[bytes]:
        """Each record's messages as bytes: (role, content) pairs of text numbers."""
        import pyarrow.compute as pc

        flat = messages.flatten()
        pairs = np.stack([self._numbers(flat.field("role")), self._numbers(flat.field("content"))], axis=1)
        pairs[flat.is_null().to_numpy(zero_copy_only=False)] = _NO_MESSAGE
        flat_bytes = pairs.astype(np.int32).tobytes()
        ends = (np.cumsum(pc.list_value_length(messages).fill_null(0).to_numpy()) * 8).tolist()
        return [flat_bytes[start:end] for start, end in zip([0, *ends[:-1]], ends, strict=True)]

    def _numbers(self, texts: pa.Array) -> np.ndarray:
        encoded = texts.dictionary_encode()
        numbers = [self._number(text) for text in encoded.dictionary.to_pylist()]
        return np.array([*numbers, _NULL], np.int64)[encoded.indices.fill_null(len(numbers)).to_numpy()]

    def _number(self, text: str) -> int:
        number = self.codes.get(text)
        if number is None:
            number = self.codes[text] = len(self.codes)
            self.characters += len(text)
        return number
