"""Disk room for a build, checked before any work: the rows, the tokens spilled on the way, a demo's corpus."""

from __future__ import annotations

import shutil
from pathlib import Path

from openrecipes.errors import UserError

# Bytes a token can take: 4 of input_ids + 1 of loss_mask, in rows.parquet (zstd never grows them beyond a few
# bytes a page) and in the spill files a window is tokenized into.
BYTES_PER_TOKEN = 5
SPILL_TOKENS = 1 << 25  # the most tokens one window spills (build.WINDOW_TOKENS)
MARGIN_BYTES = 64 << 20
# A conversation cannot yield more tokens than twice the bytes of its record: each token of content covers at
# least one byte, and the tokens a chat format adds per message or conversation are fewer than the JSON
# (or Arrow) bytes that message or record takes.
TOKENS_PER_SOURCE_BYTE = 2


def output_bytes_bound(tokens: int) -> int:
    return tokens * BYTES_PER_TOKEN + min(tokens, SPILL_TOKENS) * BYTES_PER_TOKEN + MARGIN_BYTES


def source_tokens_bound(conversations: Path) -> int:
    """At most this many tokens can come out of the file (its uncompressed data, for a parquet file)."""
    if conversations.suffix == ".parquet":
        import pyarrow.parquet as pq

        try:
            metadata = pq.ParquetFile(conversations).metadata
            size = sum(metadata.row_group(group).total_byte_size for group in range(metadata.num_row_groups))
        except Exception:  # the source reader reports a damaged file with its own message
            return 0
        return size * TOKENS_PER_SOURCE_BYTE
    return conversations.stat().st_size * TOKENS_PER_SOURCE_BYTE if conversations.is_file() else 0


def check_free_space(out: Path, needed: int, what: str) -> None:
    existing = out
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    free = shutil.disk_usage(existing).free
    if needed > free:
        raise UserError(f"{out}: {what} need up to {needed / 2**30:,.1f} GiB on disk and {free / 2**30:,.1f} GiB "
                        "are free; pass fewer --rows or an --out on a larger disk")
