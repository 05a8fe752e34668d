"""The rows.parquet writer: fixed row-group size, rows_sha256 as rows are written, atomic rename at the end."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np

from openrecipes.digest import file_sha256

ROWS_PER_ROW_GROUP = 64
SCHEMA_FIELDS = (("input_ids", "int32"), ("loss_mask", "uint8"))


class RowsWriter:
    """Writes to a temporary file beside the target; `commit` renames it into place, so no partial rows.parquet."""

    def __init__(self, target: Path, row_tokens: int):
        import pyarrow as pa
        import pyarrow.parquet as pq

        self.target, self.row_tokens = target, row_tokens
        self.temporary = target.with_name(f".{target.name}.tmp-{os.getpid()}")
        self.schema = pa.schema([(name, pa.list_(getattr(pa, kind)())) for name, kind in SCHEMA_FIELDS])
        # Every setting that shapes the bytes is spelled out: parquet_sha256 is part of the published contract.
        self.writer = pq.ParquetWriter(self.temporary, self.schema, compression="zstd", compression_level=3,
                                       use_dictionary=False, write_statistics=False, version="2.6")
        self.rows_sha256 = hashlib.sha256()
        self.rows = self.supervised_tokens = 0
        self._ids: list[np.ndarray] = []
        self._masks: list[np.ndarray] = []

    def add(self, ids: np.ndarray, mask: np.ndarray) -> None:
        # hashed straight from the arrays' memory (contiguous copies only where they are not already)
        self.rows_sha256.update(np.ascontiguousarray(ids, "<i4").data)
        self.rows_sha256.update(np.ascontiguousarray(mask, np.uint8).data)
        self.rows += 1
        self.supervised_tokens += int(mask.sum())
        self._ids.append(ids)
        self._masks.append(mask)
        if len(self._ids) == ROWS_PER_ROW_GROUP:
            self._write_group()

    def _write_group(self) -> None:
        import pyarrow as pa

        offsets = pa.array(np.arange(len(self._ids) + 1, dtype=np.int32) * self.row_tokens)
        columns = [pa.ListArray.from_arrays(offsets, pa.array(np.concatenate(values)))
                   for values in (self._ids, self._masks)]
        self.writer.write_table(pa.Table.from_arrays(columns, schema=self.schema))
        self._ids, self._masks = [], []

    def commit(self) -> tuple[str, int]:
        """Close, rename into place; returns (parquet_sha256, parquet_bytes)."""
        if self._ids:
            self._write_group()
        self.writer.close()
        digest, size = file_sha256(self.temporary), self.temporary.stat().st_size
        os.replace(self.temporary, self.target)
        return digest, size

    def abandon(self) -> None:
        self.writer.close()
        self.temporary.unlink(missing_ok=True)


class RowPacker:
    """Concatenates conversations (each already ending in its EOS) and cuts exact rows; keeps only the remainder."""

    def __init__(self, writer: RowsWriter, rows_wanted: int):
        self.writer, self.rows_wanted = writer, rows_wanted
        self.rows_without_target = 0
        self.stream_tokens = 0  # tokens added so far
        self.cut_tokens = 0  # tokens up to the end of the last row cut, written or skipped
        self._ids: list[np.ndarray] = []
        self._masks: list[np.ndarray] = []
        self._pending = 0

    @property
    def done(self) -> bool:
        return self.writer.rows >= self.rows_wanted

    def add(self, ids: np.ndarray, mask: np.ndarray) -> None:
        self._ids.append(ids)
        self._masks.append(mask)
        self._pending += len(ids)
        self.stream_tokens += len(ids)
        row_tokens = self.writer.row_tokens
        if self._pending < row_tokens:
            return
        ids, mask = np.concatenate(self._ids), np.concatenate(self._masks)
        full = len(ids) // row_tokens
        for row in range(full):
            if self.done:
                break
            cut = slice(row * row_tokens, (row + 1) * row_tokens)
            if mask[cut].any():
                self.writer.add(ids[cut], mask[cut])
            else:
                self.rows_without_target += 1
            self.cut_tokens += row_tokens
        rest = full * row_tokens
        self._ids, self._masks, self._pending = [ids[rest:]], [mask[rest:]], len(ids) - rest
