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
        self.starts, self.ends = _line_index(path)
        self.count = len(self.starts)

    def read(self, indices: np.ndarray, batch_size: int) -> Iterator[tuple[np.ndarray, list[bytes]]]:
        """The raw lines of the given ascending indices, in batches of at most batch_size. Lines close together
        are read in one call and cut apart; scattered ones one by one."""
        with self.path.open("rb") as lines:
            for first in range(0, len(indices), batch_size):
                batch = indices[first:first + batch_size]
                starts, ends = self.starts[batch], self.ends[batch]
                span = int(ends[-1] - starts[0])
                if span <= 2 * int((ends - starts).sum()) + (1 << 16):
                    lines.seek(int(starts[0]))
                    block = lines.read(span)
                    cuts = zip((starts - starts[0]).tolist(), (ends - starts[0]).tolist())
                    yield batch, [block[start:end] for start, end in cuts]
                    continue
                raws = []
                for start, end in zip(starts.tolist(), ends.tolist()):
                    lines.seek(start)
                    raws.append(lines.read(end - start))
                yield batch, raws


_WHITESPACE = np.zeros(256, bool)
_WHITESPACE[list(b" \t\n\r\x0b\x0c")] = True  # what bytes.strip() removes: a line of only these is blank
INDEX_CHUNK_BYTES = 1 << 22


def _line_index(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """(start, end) byte offsets of every non-blank line (end past its newline), read in chunks with numpy."""
    starts, ends = [], []
    line_start, line_has_text, offset = 0, False, 0
    with path.open("rb") as lines:
        for chunk in iter(lambda: lines.read(INDEX_CHUNK_BYTES), b""):
            data = np.frombuffer(chunk, np.uint8)
            text_before = np.concatenate([[0], np.cumsum(~_WHITESPACE[data], dtype=np.int64)])
            newlines = np.flatnonzero(data == 10)
            line_firsts = np.concatenate([[0], newlines[:-1] + 1])  # in this chunk; the first may continue a line
            has_text = text_before[newlines + 1] - text_before[line_firsts] > 0
            if len(newlines):
                has_text[0] |= line_has_text
                line_starts = np.concatenate([[line_start], offset + newlines[:-1] + 1])
                starts.append(line_starts[has_text])
                ends.append(offset + newlines[has_text] + 1)
                line_start = offset + int(newlines[-1]) + 1
                line_has_text = False
            rest_first = int(newlines[-1]) + 1 if len(newlines) else 0
            line_has_text |= bool(text_before[-1] - text_before[rest_first] > 0)
            offset += len(chunk)
    if line_has_text:  # a last line without a newline
        starts.append(np.array([line_start]))
        ends.append(np.array([offset]))
    if not starts:
        return np.empty(0, np.int64), np.empty(0, np.int64)
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
