"""Rebuild the gpt-oss, Qwen3 and Llama 3.1 tokenizers offline from the vocabularies `quicktok-v1` ships.

The rebuilt vocabulary is checked against a pinned sha256 of its tiktoken-format rank file before anything is
written, so an exported tokenizer.json is the real one or nothing.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import struct
from dataclasses import dataclass
from pathlib import Path

from openrecipes.atomic import check_output_folder, holds, starts_with, write_output
from openrecipes.errors import UserError
from openrecipes.rows.llama3_template import LLAMA3_CHAT_TEMPLATE
from openrecipes.rows.qwen3_template import QWEN3_CHAT_TEMPLATE

# tiktoken's published digest of o200k_base.tiktoken (openaipublic.blob.core.windows.net).
O200K_BASE_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
# Qwen publishes no rank-file digest; this pins the 151,643 byte-level ranks of quicktok-v1 0.4.0's qwen3 data,
# which tests/test_rows_tokenizers.py checks encode like quicktok's own Qwen3 encoder.
QWEN3_RANKS_SHA256 = "b2b1b8dfb5cc5f024bafc373121c6aba3f66f9a5a0269e243470a1de16a33186"
# Meta's published digest of Llama 3's tokenizer.model (the same 128,000 ranks in Llama 3, 3.1, 3.2 and 3.3).
LLAMA3_RANKS_SHA256 = "82e9d31979e92ab929cd544440f129d9ecd797b69e327f80f17e1c50d5551b55"

O200K_PATTERN = (
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
QWEN_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
LLAMA3_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)"
    r"|\s+"
)
# quicktok names Llama 3's 256 special tokens as Llama 3 did; Llama 3.1 renamed four of them (its chat template
# writes <|eom_id|> and <|python_tag|>) and renumbered the reserved ones. The ids are the same.
LLAMA31_NAMED_SPECIALS = {128000: "<|begin_of_text|>", 128001: "<|end_of_text|>",
                          128002: "<|reserved_special_token_0|>", 128003: "<|reserved_special_token_1|>",
                          128004: "<|finetune_right_pad_id|>",
                          128005: "<|reserved_special_token_2|>", 128006: "<|start_header_id|>",
                          128007: "<|end_header_id|>", 128008: "<|eom_id|>", 128009: "<|eot_id|>",
                          128010: "<|python_tag|>"}
LLAMA31_SPECIALS = {**LLAMA31_NAMED_SPECIALS,
                    **{token_id: f"<|reserved_special_token_{token_id - 128008}|>"
                       for token_id in range(128011, 128256)}}


@dataclass(frozen=True)
class VocabSpec:
    """One model family's tokenizer as quicktok stores it, and what the exported directory declares."""

    ranks_file: str
    specials_file: str
    ranks_sha256: str
    pattern: str
    eos_token: str
    pad_token: str | None
    non_special: tuple[str, ...] = ()  # added tokens HF marks special=false (Qwen3's <think>, <tool_call>, ...)
    bos_token: str | None = None  # also added at the start of plain encodes, as the model's own tokenizer does
    chat_template: str | None = None
    special_names: dict[int, str] | None = None  # the model's names for quicktok's special ids, where they differ


VOCABS = {
    "gpt-oss": VocabSpec("o200k.vocab", "o200k_harmony.special", O200K_BASE_SHA256, O200K_PATTERN,
                         eos_token="<|return|>", pad_token="<|endoftext|>"),
    "qwen3": VocabSpec("qwen3.vocab", "qwen3.special", QWEN3_RANKS_SHA256, QWEN_PATTERN,
                       eos_token="<|im_end|>", pad_token="<|endoftext|>",
                       non_special=("<tool_call>", "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>",
                                    "<|fim_suffix|>", "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>",
                                    "<tool_response>", "</tool_response>", "<think>", "</think>"),
                       chat_template=QWEN3_CHAT_TEMPLATE),
    "llama3": VocabSpec("llama3.vocab", "llama3.special", LLAMA3_RANKS_SHA256, LLAMA3_PATTERN,
                        eos_token="<|eot_id|>", pad_token=None, bos_token="<|begin_of_text|>",
                        chat_template=LLAMA3_CHAT_TEMPLATE, special_names=LLAMA31_SPECIALS),
}


def _quicktok_data(name: str) -> bytes:
    import quicktok

    return (Path(quicktok.__file__).parent / "data" / name).read_bytes()


def read_ranks(spec: VocabSpec) -> list[bytes]:
    """Token byte strings indexed by rank, from quicktok's `<u32 n> (<u16 len> bytes <u32 rank>)*` file."""
    blob = _quicktok_data(spec.ranks_file)
    (count,) = struct.unpack_from("<I", blob, 0)
    tokens: list[bytes | None] = [None] * count
    offset = 4
    for _ in range(count):
        (length,) = struct.unpack_from("<H", blob, offset)
        token = blob[offset + 2: offset + 2 + length]
        (rank,) = struct.unpack_from("<I", blob, offset + 2 + length)
        tokens[rank] = token
        offset += 6 + length
    if offset != len(blob) or any(token is None for token in tokens):
        raise UserError(f"quicktok data {spec.ranks_file}: ranks are not 0..{count - 1}; reinstall quicktok-v1==0.4.0")
    return tokens  # type: ignore[return-value]


def read_specials(spec: VocabSpec) -> dict[int, str]:
    """Special tokens by id; where quicktok lists two names for one id, the first (the real name) wins; where the
    model names them otherwise (spec.special_names), its names, the ids and every shared name checked first."""
    blob = _quicktok_data(spec.specials_file)
    (count,) = struct.unpack_from("<I", blob, 0)
    specials: dict[int, str] = {}
    offset = 4
    for _ in range(count):
        token_id, length = struct.unpack_from("<IH", blob, offset)
        specials.setdefault(token_id, blob[offset + 6: offset + 6 + length].decode())
        offset += 6 + length
    if spec.special_names is None:
        return specials
    kept = {token_id: name for token_id, name in specials.items() if "reserved" not in name}
    if sorted(specials) != sorted(spec.special_names) or any(spec.special_names[i] != name for i, name in kept.items()):
        raise UserError(f"quicktok data {spec.specials_file}: special tokens are not the expected ones; "
                        "reinstall quicktok-v1==0.4.0")
    return dict(spec.special_names)


def tiktoken_rank_file(tokens: list[bytes]) -> bytes:
    """The tiktoken `.tiktoken` text: one `base64(token) rank` line per rank, in rank order."""
    return "".join(f"{base64.b64encode(token).decode()} {rank}\n" for rank, token in enumerate(tokens)).encode()


def verified_ranks(family: str) -> tuple[list[bytes], bytes]:
    """The family's token byte strings by rank and their tiktoken rank file, whose sha256 is checked first."""
    tokens = read_ranks(VOCABS[family])
    rank_file = tiktoken_rank_file(tokens)
    digest = hashlib.sha256(rank_file).hexdigest()
    if digest != VOCABS[family].ranks_sha256:
        raise UserError(f"quicktok data for {family}: rank file sha256 {digest} is not the official "
                        f"{VOCABS[family].ranks_sha256}; reinstall quicktok-v1==0.4.0")
    return tokens, rank_file


def _byte_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte -> printable character map that byte-level BPE vocabularies are written in."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), 256))
    others = (chr(256 + extra) for extra in itertools.count())  # the rest, in byte order, from U+0100 on
    return {byte: chr(byte) if byte in printable else next(others) for byte in range(256)}


def _merges(tokens: list[bytes]) -> list[tuple[int, int]]:
    """Every (left, right) split of every token into two tokens, ordered by the rank of the token they make.

    Listing all splits (not one per token) is what makes HF's merge-priority BPE pick exactly what tiktoken's
    rank-based BPE picks; it is the same construction as transformers' TikTokenConverter.
    """
    rank = {token: rank for rank, token in enumerate(tokens)}.get
    merges: list[tuple[int, int]] = []
    for token in tokens:
        splits = [(left, right) for cut in range(1, len(token))
                  if (left := rank(token[:cut])) is not None and (right := rank(token[cut:])) is not None]
        merges.extend(sorted(splits))
    return merges


def build_tokenizer(tokens: list[bytes], specials: dict[int, str], pattern: str,
                    non_special: tuple[str, ...] = (), bos_token: str | None = None):
    """A byte-level BPE `tokenizers.Tokenizer` from tiktoken-style ranks, with added tokens at their given ids."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, processors

    to_unicode = str.maketrans({chr(byte): char for byte, char in _byte_to_unicode().items()})
    pieces = [token.decode("latin-1").translate(to_unicode) for token in tokens]
    vocab = {piece: rank for rank, piece in enumerate(pieces)}
    merges = [(pieces[left], pieces[right]) for left, right in _merges(tokens)]
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=merges, ignore_merges=True))
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(pattern), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tokenizer.decoder = decoders.ByteLevel()
    if sorted(specials) != list(range(len(tokens), len(tokens) + len(specials))):
        raise UserError("special token ids are not contiguous after the vocabulary; they could not keep their ids")
    tokenizer.add_tokens([AddedToken(specials[token_id], special=specials[token_id] not in non_special,
                                     normalized=False) for token_id in sorted(specials)])
    for token_id, content in specials.items():
        if tokenizer.token_to_id(content) != token_id:
            raise UserError(f"special token {content} landed on id {tokenizer.token_to_id(content)}, not {token_id}")
    if bos_token:
        bos = (bos_token, tokenizer.token_to_id(bos_token))
        tokenizer.post_processor = processors.TemplateProcessing(single=f"{bos_token} $A",
                                                                 pair=f"{bos_token} $A {bos_token} $B:1",
                                                                 special_tokens=[bos])
    return tokenizer


def build_tokenizer_json(family: str, tokens: list[bytes]) -> tuple[str, dict]:
    """(tokenizer.json text, tokenizer_config.json dict) for a family from its verified ranks."""
    spec = VOCABS[family]
    specials = read_specials(spec)
    tokenizer = build_tokenizer(tokens, specials, spec.pattern, spec.non_special, spec.bos_token)
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "eos_token": spec.eos_token,
        "pad_token": spec.pad_token,
        "bos_token": spec.bos_token,
        "clean_up_tokenization_spaces": False,
        "model_max_length": 131072,
        "added_tokens_decoder": {str(token_id): {"content": content, "special": content not in spec.non_special}
                                 for token_id, content in sorted(specials.items())},
    }
    if spec.chat_template:
        config["chat_template"] = spec.chat_template
    return tokenizer.to_str(), config


def export_tokenizer(family: str, out_dir: Path) -> dict:
    """Write tokenizer.json + tokenizer_config.json (and, for gpt-oss, o200k_base.tiktoken, for openai-harmony
    offline: TIKTOKEN_ENCODINGS_BASE=out_dir) to out_dir."""
    if family not in VOCABS:
        raise UserError(f"tokenizer export: {family!r} is not a bundled family; use one of {', '.join(VOCABS)}")
    check_output_folder(out_dir, "--out", holds("tokenizer.json", "tokenizer_config.json"))
    out_dir.mkdir(parents=True, exist_ok=True)
    tokens, rank_file = verified_ranks(family)
    tokenizer_json, config = build_tokenizer_json(family, tokens)
    ours = starts_with("{")  # both JSON files; a tokenizer folder's own tokenizer files are replaced
    write_output(out_dir / "tokenizer.json", tokenizer_json, "--out", ours)
    write_output(out_dir / "tokenizer_config.json", json.dumps(config, indent=2, ensure_ascii=False) + "\n", "--out",
                 ours)
    if family == "gpt-oss":
        write_output(out_dir / "o200k_base.tiktoken", rank_file, "--out", lambda path: True)
    return {"family": family, "out": str(out_dir), "ranks_sha256": VOCABS[family].ranks_sha256,
            "tokenizer_json_sha256": hashlib.sha256(tokenizer_json.encode()).hexdigest()}

