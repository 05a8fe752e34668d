"""Read Tulu-shaped conversations (parquet or JSONL) by index without holding the dataset in memory."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import numpy as np

from openrecipes.errors import UserError

PARQUET_BATCH_ROWS = 4096


class JsonlSource:
    """One conversation per non-blank line; an index of line offsets allows reading any subset in order."""

    def __init__(self, path: Path):
        self.path = path
        starts, ends, position = [], [], 0
        with path.open("rb") as lines:
            for line in lines:
                if line.strip():
                    starts.append(position)
                    ends.append(position + len(line))
                position += len(line)
        self.starts, self.ends = np.asarray(starts, np.int64), np.asarray(ends, np.int64)
        self.count = len(starts)

    def read(self, indices: np.ndarray) -> Iterator[tuple[np.ndarray, list[bytes]]]:
        """The raw lines of the given ascending indices, in batches."""
        with self.path.open("rb") as lines:
            for batch in np.array_split(indices, max(1, len(indices) // PARQUET_BATCH_ROWS)):
                raws = []
                for index in batch:
                    lines.seek(self.starts[index])
                    raws.append(lines.read(self.ends[index] - self.starts[index]))
                yield batch, raws


class ParquetSource:
    """A Tulu parquet (columns id, messages, source); only `messages` is read, one record batch at a time."""

    def __init__(self, path: Path):
        import pyarrow.parquet as pq

        self.path = path
        try:
            self.file = pq.ParquetFile(path)
        except Exception as error:  # pyarrow raises several types for a damaged file
            raise UserError(f"{path}: not a readable parquet file ({error}); re-download it or pass JSONL") from None
        if "messages" not in self.file.schema_arrow.names:
            raise UserError(f"{path}: messages: no such column (has {', '.join(self.file.schema_arrow.names)}); "
                            "pass a Tulu-shaped file with messages: [{role, content}]")
        self.count = self.file.metadata.num_rows

    def read(self, indices: np.ndarray) -> Iterator[tuple[np.ndarray, list]]:
        start = 0
        batches = self.file.iter_batches(batch_size=PARQUET_BATCH_ROWS, columns=["messages"])
        while True:
            try:
                batch = next(batches)
            except StopIteration:
                return
            except Exception as error:
                raise UserError(f"{self.path}: rows from {start}: unreadable ({error}); re-download the file") from None
            wanted = indices[(indices >= start) & (indices < start + batch.num_rows)]
            if len(wanted):
                yield wanted, batch.column(0).take(wanted - start).to_pylist()
            start += batch.num_rows


def open_source(path: Path) -> JsonlSource | ParquetSource:
    if not path.is_file():
        raise UserError(f"{path}: no such file; pass --conversations with a .parquet or .jsonl file")
    if path.suffix == ".parquet":
        return ParquetSource(path)
    if path.suffix in (".jsonl", ".json"):
        return JsonlSource(path)
    raise UserError(f"{path}: unknown file type {path.suffix!r}; pass a .parquet or .jsonl file")
