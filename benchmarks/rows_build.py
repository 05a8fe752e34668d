"""Row builder vs a naive loop of one apply_chat_template per conversation, on the same input.

Both build Qwen3 rows (qwen3 format vs Qwen3's template with {% generation %} markers for the same mask) from the
bundled chatterbot dialogs repeated EPOCHS times; the rows must be byte-identical (same rows_sha256).
Run: .venv/bin/python benchmarks/rows_build.py [EPOCHS]
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from openrecipes.rows.build import BuildRequest, build_rows
from openrecipes.rows.demo import corpus_dialogs, write_tulu_jsonl
from openrecipes.rows.qwen3_template import QWEN3_GENERATION_TEMPLATE
from openrecipes.rows.vocab_export import export_tokenizer

ROW_TOKENS, SEED = 8192, 42
SEEDS_BUILD_TOKENS = 12_800 * 8_192


def naive_rows_sha256(conversations: Path, template_dir: Path, eos_id: int) -> tuple[str, int]:
    """One apply_chat_template call per conversation, in the same permutation, packed the same way."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(template_dir))
    records = [json.loads(line)["messages"] for line in conversations.read_text().splitlines()]
    order = np.random.Generator(np.random.PCG64(SEED)).permutation(len(records))
    ids, masks = [], []
    for index in order:
        out = tokenizer.apply_chat_template(records[index], tokenize=True, return_dict=True,
                                            return_assistant_tokens_mask=True)
        ids += [*out["input_ids"], eos_id]
        masks += [*out["assistant_masks"], 0]
    ids, masks = np.asarray(ids, "<i4"), np.asarray(masks, np.uint8)
    digest = hashlib.sha256()
    for row in range(len(ids) // ROW_TOKENS):
        cut = slice(row * ROW_TOKENS, (row + 1) * ROW_TOKENS)
        if masks[cut].any():
            digest.update(ids[cut].tobytes())
            digest.update(masks[cut].tobytes())
    return digest.hexdigest(), len(ids)


def main() -> None:
    epochs = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        export_tokenizer("qwen3", root / "qwen3")
        template_dir = root / "qwen3-generation"
        template_dir.mkdir()
        (template_dir / "tokenizer.json").write_bytes((root / "qwen3" / "tokenizer.json").read_bytes())
        config = json.loads((root / "qwen3" / "tokenizer_config.json").read_text())
        (template_dir / "tokenizer_config.json").write_text(
            json.dumps({**config, "chat_template": QWEN3_GENERATION_TEMPLATE}))
        conversations = root / "conversations.jsonl"
        write_tulu_jsonl(corpus_dialogs(), epochs, conversations)

        started = time.perf_counter()
        manifest = build_rows(BuildRequest(conversations, root / "qwen3", "qwen3", ROW_TOKENS, 10**9, SEED,
                                           root / "rows", workers=os.cpu_count() or 1))
        builder_s = time.perf_counter() - started
        peak_rss_mib = max(resource.getrusage(who).ru_maxrss for who in
                           (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)) / 1024

        started = time.perf_counter()
        naive_sha256, tokens = naive_rows_sha256(conversations, template_dir, eos_id=151643)
        naive_s = time.perf_counter() - started

    builder_rate, naive_rate = tokens / builder_s, tokens / naive_s
    print(f"input: {epochs} epochs of chatterbot-corpus dialogs, {tokens:,} tokens, {manifest['rows']} rows")
    print(f"builder ({os.cpu_count()} workers): {builder_s:.2f} s, {builder_rate:,.0f} tokens/s, "
          f"peak RSS {peak_rss_mib:,.0f} MiB (largest process)")
    print(f"naive apply_chat_template loop: {naive_s:.2f} s, {naive_rate:,.0f} tokens/s")
    print(f"speed ratio: {naive_s / builder_s:.1f}x; identical rows: {naive_sha256 == manifest['rows_sha256']}")
    print(f"projected 12,800 x 8,192-token build ({SEEDS_BUILD_TOKENS:,} tokens): builder "
          f"{SEEDS_BUILD_TOKENS / builder_rate / 60:.1f} min, naive {SEEDS_BUILD_TOKENS / naive_rate / 60:.1f} min")
    if naive_sha256 != manifest["rows_sha256"]:
        sys.exit("rows differ from the naive loop")


if __name__ == "__main__":
    main()
