"""Read Tulu-shaped conversations (parquet or JSONL) by index without holding the dataset in memory."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from openrecipes.errors import UserError

if TYPE_CHECKING:
    import pyarrow as pa

PARQUET_BATCH_ROWS = 4096


@dataclass(frozen=True)
class JsonlLines:
    """Some lines of a JSONL file by byte range, read where they are encoded (a worker) rather than shipped to it."""

    path: Path
    starts: np.ndarray
    ends: np.ndarray

    def read(self) -> list[bytes]:
        """The lines, each with its newline. Lines close together are read in one call and cut apart."""
        starts, ends = self.starts.tolist(), self.ends.tolist()
        with self.path.open("rb") as lines:
            if ends[-1] - starts[0] <= 4 * sum(ends) - sum(starts) + (1 << 16):
                lines.seek(starts[0])
                block = lines.read(ends[-1] - starts[0])
                return [block[start - starts[0]:end - starts[0]] for start, end in zip(starts, ends, strict=True)]
            raws = []
            for start, end in zip(starts, ends, strict=True):
                lines.seek(start)
                raws.append(lines.read(end - start))
            return raws


class JsonlSource:
    """One conversation per non-blank line; an index of line offsets allows reading any subset in order."""

    def __init__(self, path: Path):
        self.path = path
        self.starts, self.ends = _line_index(path)
        self.count = len(self.starts)

    def read(self, indices: np.ndarray, batch_size: int) -> Iterator[tuple[np.ndarray, JsonlLines]]:
        """The given ascending indices in batches of at most batch_size, as byte ranges the encoder reads."""
        for first in range(0, len(indices), batch_size):
            batch = indices[first:first + batch_size]
            yield batch, JsonlLines(self.path, self.starts[batch], self.ends[batch])


_WHITESPACE = np.zeros(256, bool)
_WHITESPACE[list(b" \t\n\r\x0b\x0c")] = True  # what bytes.strip() removes: a line of only these is blank
INDEX_CHUNK_BYTES = 1 << 22


def _line_index(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """(start, end) byte offsets of every non-blank line (end past its newline). Read in chunks cut after their
    last newline; a line is non-blank when its first byte is, and the few that open with whitespace are checked
    one by one."""
    starts: list[np.ndarray] = []
    ends: list[np.ndarray] = []
    offset, rest = 0, b""  # rest: the bytes after the last newline read so far, at file offset `offset`
    with path.open("rb") as lines:
        while True:
            chunk = lines.read(INDEX_CHUNK_BYTES)
            data = rest + chunk
            data_ends = np.flatnonzero(np.frombuffer(data, np.uint8) == 10) + 1
            if not chunk and len(data) > (data_ends[-1] if len(data_ends) else 0):
                data_ends = np.append(data_ends, len(data))  # a last line without a newline
            data_starts = np.concatenate([[0], data_ends[:-1]]).astype(np.int64)[:len(data_ends)]
            opens_blank = _WHITESPACE[np.frombuffer(data, np.uint8)[data_starts]]
            keep = np.ones(len(data_ends), bool)
            for line in np.flatnonzero(opens_blank).tolist():
                keep[line] = bool(data[data_starts[line]:data_ends[line]].strip())
            starts.append(offset + data_starts[keep])
            ends.append(offset + data_ends[keep])
            if not chunk:
                break
            cut = int(data_ends[-1]) if len(data_ends) else 0
            offset, rest = offset + cut, data[cut:]
    return np.concatenate(starts).astype(np.int64), np.concatenate(ends).astype(np.int64)


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
