"""The encoders of the coded formats' tokenizers: the Encoder interface and the `tokenizers` reference encoding
(PartsEncoder) that the quicktok encoder falls back to."""

from __future__ import annotations

import functools
import json
from itertools import chain, compress
from pathlib import Path

import numpy as np

from openrecipes.errors import UserError
from openrecipes.rows.formats import FORMAT_SPECIALS, RENDERERS, ROLES, Part

# Characters tokenized per call: the tokenizer keeps several objects per token until the call's results are read.
ENCODE_CHARACTERS = 1 << 18
def tokenizer_json_path(tokenizer: Path) -> Path:
    path = tokenizer / "tokenizer.json" if tokenizer.is_dir() else tokenizer
    if not path.is_file():
        raise UserError(f"{tokenizer}: no tokenizer.json; pass a Hugging Face tokenizer directory "
                        "(`openrecipes tokenizer export gpt-oss --out DIR` writes one)")
    return path


@functools.lru_cache(maxsize=8)
def _loaded_tokenizer(path: Path, size: int, mtime_ns: int):
    """A tokenizer.json loaded once per process: one of 150,000-200,000 tokens takes 1-2 s to load, and a process
    may make several encoders of one file (a quicktok encoder's fallback, builds run one after another in a notebook
    or a test session). Keyed on the file's size and mtime, so a rewritten file is read again; encoders set the
    tokenizer's flags on every call, so they can share it."""
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(path))


def load_tokenizer(path: Path):
    stat = path.stat()
    try:
        return _loaded_tokenizer(path.resolve(), stat.st_size, stat.st_mtime_ns)
    except Exception as error:  # tokenizers raises a bare Exception for a file it cannot read
        raise UserError(f"{path}: not a tokenizers file ({error}); pass a Hugging Face tokenizer.json") from None


class Encoder:
    """Conversations -> (input_ids, loss_mask, tokens per conversation), all conversations end to end."""

    def encode_stream(self, conversations: list[list[dict]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        raise NotImplementedError

    def encode(self, conversations: list[list[dict]]) -> list[tuple[np.ndarray, np.ndarray]]:
        """(input_ids, loss_mask) of each conversation."""
        ids, mask, lengths = self.encode_stream(conversations)
        cuts = np.cumsum(lengths)[:-1]
        return list(zip(np.split(ids, cuts), np.split(mask, cuts), strict=True))


class PartsEncoder(Encoder):
    """Encodes conversations in one of the coded formats with a `tokenizers` tokenizer.json.

    The reference encoding tokenizes each run of text between two special tokens on its own and places the
    specials by id. When the format's specials are plain added special tokens, a batch is instead tokenized as
    one string with the specials in it: the tokenizer splits on them exactly where the reference places them, so
    the tokens are the same, and one call replaces a dozen per conversation. The batch falls back to the reference
    when the tokens say otherwise (a special token's text inside message content).
    """

    def __init__(self, tokenizer: Path, chat_format: str, eos: str):
        self.tokenizer = load_tokenizer(tokenizer_json_path(tokenizer))
        self.render = RENDERERS[chat_format]
        self.eos = eos
        self.special_ids = {}
        for token in (*FORMAT_SPECIALS[chat_format], eos, *role_tokens(chat_format)):
            token_id = self.tokenizer.token_to_id(token)
            if token_id is None:
                raise UserError(f"{tokenizer}: tokenizer.json: no {token} token; --chat-format {chat_format} "
                                f"needs its model's tokenizer")
            self.special_ids[token] = token_id
        added = self.tokenizer.get_added_tokens_decoder()
        self.special_token_ids = np.array(sorted(token_id for token_id, token in added.items() if token.special))
        self.joined = _splits_exactly_on(added, self.special_ids.values()) and _keeps_offsets(self.tokenizer)

    def encode_stream(self, conversations: list[list[dict]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        encoded = [(np.empty(0, np.int32), np.empty(0, np.uint8), np.empty(0, np.int64))]
        batch, characters = [], 0
        for number, messages in enumerate(conversations):
            batch.append(self.render(messages, self.eos))
            characters += sum(len(message["content"]) for message in messages)
            if characters >= ENCODE_CHARACTERS or number == len(conversations) - 1:
                encoded.append((self.joined and self._encode_joined(batch)) or self._encode_runs(batch))
                batch, characters = [], 0
        ids, masks, lengths = (np.concatenate(column) for column in zip(*encoded, strict=True))
        return ids, masks, lengths

    def _encode_joined(self, conversations: list[list[Part]]) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        texts: list[str] = []
        part_texts: list[str] = []
        part_flags: list[bool] = []
        part_is_special: list[bool] = []
        conversation_parts: list[int] = []
        for parts in conversations:
            conversation_texts, flags, special = zip(*parts, strict=True)
            texts.append("".join(conversation_texts))
            part_texts += conversation_texts
            part_flags += flags
            part_is_special += special
            conversation_parts.append(len(parts))
        part_lengths = np.fromiter(map(len, part_texts), np.int64, len(part_texts))
        part_ends = np.cumsum(part_lengths)
        specials = np.flatnonzero(part_is_special)
        special_spans = np.stack([part_ends[specials] - part_lengths[specials], part_ends[specials]], axis=1)
        special_ids = list(map(self.special_ids.__getitem__, compress(part_texts, part_is_special)))
        conversation_starts = np.concatenate([[0], part_ends[np.cumsum(conversation_parts)[:-1] - 1]])
        self.tokenizer.encode_special_tokens = False
        # One string per conversation: the tokenizer's cost grows faster than linearly with the string's length.
        encodings = self.tokenizer.encode_batch(texts, add_special_tokens=False)
        lengths = np.array([len(encoding) for encoding in encodings], np.int64)
        ids = np.fromiter(chain.from_iterable(encoding.ids for encoding in encodings), np.int32, lengths.sum())
        offsets = (np.array(list(chain.from_iterable(encoding.offsets for encoding in encodings)), np.int64)
                   .reshape(-1, 2) + np.repeat(conversation_starts, lengths)[:, None])
        at_special = np.flatnonzero(np.isin(ids, self.special_token_ids))
        # Same tokens as the reference: exactly the format's specials, each over its own text, and every other
        # token covering some text (so a token's supervision can be read off its characters, as below).
        if not (len(at_special) == len(special_ids) and (ids[at_special] == special_ids).all()
                and (offsets[at_special] == special_spans).all() and (offsets[:, 1] > offsets[:, 0]).all()):
            return None
        covered = np.concatenate([[0], np.cumsum(np.repeat(np.array(part_flags, np.int64), part_lengths))])
        mask = (covered[offsets[:, 1]] - covered[offsets[:, 0]] > 0).astype(np.uint8)
        return ids, mask, lengths

    def _encode_runs(self, conversations: list[list[Part]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        runs_per_conversation = [_runs(parts) for parts in conversations]
        texts = [run[0] for runs in runs_per_conversation for run in runs if not isinstance(run, Part)]
        self.tokenizer.encode_special_tokens = True  # special-token text inside content is ordinary text
        encodings = iter(self.tokenizer.encode_batch(texts, add_special_tokens=False)) if texts else iter(())
        ids: list[int] = []
        mask: list[int] = []
        lengths = []
        for runs in runs_per_conversation:
            start = len(ids)
            for run in runs:
                if isinstance(run, Part):
                    ids.append(self.special_ids[run.text])
                    mask.append(run.supervised)
                    continue
                encoding = next(encodings)
                ids += encoding.ids
                mask += _token_mask(run[1], encoding.offsets, len(encoding.ids))
            lengths.append(len(ids) - start)
        return np.array(ids, np.int32), np.array(mask, np.uint8), np.array(lengths, np.int64)


def _splits_exactly_on(added: dict, special_ids) -> bool:
    """Whether the tokenizer cuts its input at each of these specials' text and nowhere around it."""
    tokens = [added.get(token_id) for token_id in special_ids]
    return all(token is not None and token.special and not (token.normalized or token.lstrip or token.rstrip
                                                            or token.single_word) for token in tokens)


def _keeps_offsets(tokenizer) -> bool:
    """Whether token offsets are the same wherever a text sits in the input (no post-processor trims them)."""
    if tokenizer.post_processor is None:
        return True
    processor = json.loads(tokenizer.post_processor.__getstate__())
    steps = processor.get("processors", []) if processor["type"] == "Sequence" else [processor]
    return all(step["type"] == "TemplateProcessing" or (step["type"] == "ByteLevel" and not step["trim_offsets"])
               for step in steps)


def role_tokens(chat_format: str) -> tuple[str, ...]:
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
