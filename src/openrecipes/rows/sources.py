"""Read Tulu-shaped conversations (parquet or JSONL) by index without holding the dataset in memory."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Iterator

import numpy as np

from openrecipes.errors import UserError

if TYPE_CHECKING:
    import pyarrow as pa

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

    def read(self, indices: np.ndarray, batch_size: int) -> Iterator[tuple[np.ndarray, list[bytes]]]:
        """The raw lines of the given ascending indices, in batches of at most batch_size."""
        with self.path.open("rb") as lines:
            for first in range(0, len(indices), batch_size):
                batch = indices[first:first + batch_size]
                raws = []
                for start, end in zip(self.starts[batch].tolist(), self.ends[batch].tolist()):
                    lines.seek(start)
                    raws.append(lines.read(end - start))
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

    def read(self, indices: np.ndarray, batch_size: int) -> Iterator[tuple[np.ndarray, pa.Array]]:
        """The `messages` of the given ascending indices as Arrow arrays of at most batch_size: a compact copy
        that a worker process turns into Python objects (a slice would carry its whole record batch along)."""
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
            for first in range(0, len(wanted), batch_size):
                chunk = wanted[first:first + batch_size]
                yield chunk, batch.column(0).take(chunk - start)
            start += batch.num_rows


def open_source(path: Path) -> JsonlSource | ParquetSource:
    if not path.is_file():
        raise UserError(f"{path}: no such file; pass --conversations with a .parquet or .jsonl file")
    if path.suffix == ".parquet":
        return ParquetSource(path)
    if path.suffix in (".jsonl", ".json"):
        return JsonlSource(path)
    raise UserError(f"{path}: unknown file type {path.suffix!r}; pass a .parquet or .jsonl file")
