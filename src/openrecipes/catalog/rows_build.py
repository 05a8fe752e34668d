"""A recipe's `workload.dataset.build` block, made from the manifest of the rows it trains on.

It lives on the catalog's side because the rows tool does not know the catalog (tests/test_layering.py).
"""

from __future__ import annotations

from openrecipes.catalog.model import Build
from openrecipes.rows.manifest import RowsManifest

RATIO_DIGITS = 3  # a recipe states the supervised-token ratio to three decimals


def to_build(manifest: RowsManifest, builder: str) -> Build:
    """`builder`: the command that built the rows, as a reader would run it again."""
    return Build(name=manifest.name, tokenizer=manifest.tokenizer_described(), loss_mask=manifest.loss_mask,
                 rows=manifest.rows, row_tokens=manifest.row_tokens, padding_tokens=manifest.padding_tokens,
                 seed=manifest.seed, packing=manifest.packing_described(),
                 supervised_token_ratio=round(manifest.supervised_token_ratio, RATIO_DIGITS),
                 parquet_sha256=manifest.parquet_sha256, parquet_bytes=manifest.parquet_bytes, builder=builder)
