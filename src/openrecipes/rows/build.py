"""The streaming row builder: seeded permutation -> chat format + mask -> EOS-joined stream -> exact rows.

Conversations are tokenized in windows of the permutation: each window is read from the source in file order,
tokenized by worker processes into spill files on disk, then packed in permutation order. Memory holds the
permutation and one window's index, never the dataset or its tokens.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import shutil
import tempfile
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from openrecipes.digest import file_sha256
from openrecipes.errors import UserError
from openrecipes.rows.encode import check_bundled_tokens, eos_token_for, make_encoder, parse_record
from openrecipes.rows.encoders import tokenizer_json_path
from openrecipes.rows.formats import CHAT_FORMATS
from openrecipes.rows.manifest import PACKING, PERMUTATION, DemoCorpus, ManifestSource, ManifestTokenizer, RowsManifest
from openrecipes.rows.memo import ConversationMemo, Encoded, encode_parsed, mean_record_bytes
from openrecipes.rows.output import RowPacker, RowsWriter
from openrecipes.rows.publish import locked, publish, stage
from openrecipes.rows.room import SPILL_TOKENS, check_free_space, output_bytes_bound, source_tokens_bound
from openrecipes.rows.sources import JsonlLines, open_source

if TYPE_CHECKING:
    import pyarrow as pa

CONVERSATIONS_PER_TASK = 1024  # large enough that a task's encoding outweighs its trip between processes
TASKS_IN_FLIGHT_PER_WORKER = 2  # enough to keep workers busy; bounds the raw records held in the queue
PACK_TOKENS = 1 << 20  # tokens gathered from the spill per packing step
FIRST_WINDOW = 2048
# Tokens a window spills at most: packing reads the spill through a memory map, whose pages count as resident.
WINDOW_TOKENS = SPILL_TOKENS
# Bounds of the numeric options: a row of a million tokens, a hundred million rows, numpy's seed range.
MAX_ROW_TOKENS = 1 << 20
MAX_ROWS = 100_000_000
MAX_SEED = 2**63 - 1
MAX_WORKERS = 1024  # then capped at the machine's cores: more processes than cores only add memory


@dataclass(frozen=True)
class BuildRequest:
    conversations: Path
    tokenizer: Path
    chat_format: str
    row_tokens: int
    rows: int
    seed: int
    out: Path
    workers: int = 0  # 0: tokenize in this process
    name: str | None = None
    eos_token: str | None = None
    source_dataset: str | None = None
    source_revision: str | None = None
    demo: DemoCorpus | None = None  # the demo's corpus and epochs, recorded in the manifest


@dataclass
class Progress:
    rows: int = 0
    tokens: int = 0
    conversations: int = 0


_worker_memo: ConversationMemo | Exception | None = None


def _start_worker(tokenizer: Path, chat_format: str, eos: str) -> None:
    global _worker_memo
    os.environ["TOKENIZERS_PARALLELISM"] = "false"  # the processes are the parallelism
    try:
        _worker_memo = ConversationMemo(make_encoder(tokenizer, chat_format, eos))
    except Exception as error:  # raised by the worker's first task: a Pool restarts a failed initializer forever
        _worker_memo = error


def _worker_ready() -> None:
    _started_memo()


def _started_memo() -> ConversationMemo:
    if isinstance(_worker_memo, Exception):
        raise _worker_memo
    assert _worker_memo is not None, "the worker was started without _start_worker"
    return _worker_memo


def _encode_task(task: tuple[np.ndarray, JsonlLines | pa.Array]) -> tuple[np.ndarray, Encoded]:
    """One batch of records (JSONL lines, or parquet `messages` values) -> their tokens, by source index."""
    memo = _started_memo()
    indices, records = task
    raws = records.read() if isinstance(records, JsonlLines) else records
    if memo.pays(mean_record_bytes(raws)):
        # pyarrow loads where a batch is read through it, not at every CLI start or for long records
        from openrecipes.rows.records import arrow_messages

        messages = arrow_messages(raws)
        if messages is not None:
            return indices, memo.encode(messages)
    return indices, encode_parsed(memo.encoder, [parse_record(raw) for raw in
                                                 (raws if isinstance(raws, list) else raws.to_pylist())])


def build_rows(request: BuildRequest, on_progress: Callable[[Progress], None] = lambda progress: None) -> RowsManifest:
    """Build rows.parquet + manifest.json in request.out; returns the manifest."""
    _check_request(request)
    request = replace(request, workers=min(request.workers, os.cpu_count() or 1))
    tokens = min(request.rows * request.row_tokens, source_tokens_bound(request.conversations))
    check_free_space(request.out, output_bytes_bound(tokens),
                     f"{request.rows:,} rows of {request.row_tokens:,} tokens from {request.conversations}")
    eos = eos_token_for(request.tokenizer, request.chat_format, request.eos_token)
    check_bundled_tokens(request.tokenizer, request.chat_format, eos)
    # Workers load the tokenizer while this process indexes the source; a wrong one fails before any encoding.
    pool = (multiprocessing.get_context("spawn").Pool(request.workers, _start_worker,
                                                       (request.tokenizer, request.chat_format, eos))
            if request.workers else None)
    try:
        with locked(request.out):
            return _write_rows(request, eos, pool, on_progress)
    finally:
        if pool:
            pool.terminate()


def _write_rows(request: BuildRequest, eos: str, pool, on_progress: Callable[[Progress], None]) -> RowsManifest:
    global _worker_memo
    if pool is None:
        _worker_memo = ConversationMemo(make_encoder(request.tokenizer, request.chat_format, eos))
    source = open_source(request.conversations)
    order = np.random.Generator(np.random.PCG64(request.seed)).permutation(source.count)
    position = np.empty(source.count, np.int64)
    position[order] = np.arange(source.count)
    if pool:
        pool.apply(_worker_ready)
    staged = stage(request.out)
    writer = RowsWriter(staged / "rows.parquet", request.row_tokens)
    packer = RowPacker(writer, request.rows)
    skipped: Counter[str] = Counter()
    progress = Progress()
    try:
        with tempfile.TemporaryDirectory(dir=request.out, prefix=".rows-build-") as spill_dir:
            window_start, window = 0, FIRST_WINDOW
            while not packer.done and window_start < source.count:
                window_end = min(source.count, window_start + window)
                indices = np.flatnonzero((position >= window_start) & (position < window_end))
                tasks = source.read(indices, CONVERSATIONS_PER_TASK)
                results = _in_order(pool, request.workers, tasks) if pool else map(_encode_task, tasks)
                spill = _spill(results, Path(spill_dir), position, window_start, window_end, skipped, progress,
                               on_progress)
                _pack(spill, packer, progress, on_progress)
                used_tokens = progress.tokens or 1
                remaining = (request.rows - writer.rows) * request.row_tokens
                tokens_per_conversation = used_tokens / window_end
                window = min(math.ceil(remaining / tokens_per_conversation * 1.05) + 256,
                             max(FIRST_WINDOW, int(WINDOW_TOKENS / tokens_per_conversation)))
                window_start = window_end
        if writer.rows == 0:  # an empty file, blank lines, only broken or unusable conversations: no data set
            reasons = ", ".join(f"{reason} {count}" for reason, count in sorted(skipped.items())) or "none"
            raise UserError(f"{request.conversations}: no row could be built from {source.count:,} line(s) "
                            f"(skipped: {reasons}); give a JSONL file of conversations with assistant turns, "
                            "one a line")
    except BaseException:
        writer.abandon()
        shutil.rmtree(staged, ignore_errors=True)
        raise
    parquet_sha256, parquet_bytes = writer.commit()
    manifest = RowsManifest(
        name=request.name or f"{request.chat_format}-{request.conversations.stem}-fixed{request.row_tokens}",
        tokenizer=ManifestTokenizer(path=str(request.tokenizer),
                                    tokenizer_json_sha256=file_sha256(tokenizer_json_path(request.tokenizer))),
        chat_format=request.chat_format,
        loss_mask=request.chat_format,
        eos_token=eos,
        rows=writer.rows,
        rows_requested=request.rows,
        data_ran_out=writer.rows < request.rows,
        row_tokens=request.row_tokens,
        padding_tokens=0,
        seed=request.seed,
        permutation=PERMUTATION,
        packing=PACKING.format(row_tokens=f"{request.row_tokens:,}"),
        supervised_tokens=writer.supervised_tokens,
        supervised_token_ratio=round(writer.supervised_tokens / max(1, writer.rows * request.row_tokens), 6),
        rows_sha256=writer.rows_sha256.hexdigest(),
        parquet_sha256=parquet_sha256,
        parquet_bytes=parquet_bytes,
        source=ManifestSource(path=str(request.conversations), dataset=request.source_dataset,
                              revision=request.source_revision, conversations=source.count),
        conversations_used=progress.conversations,
        conversations_skipped=dict(sorted(skipped.items())),
        rows_skipped_without_target=packer.rows_without_target,
        demo=request.demo,
    )
    manifest.write(staged / "manifest.json")
    publish(request.out, staged)
    return manifest


def _check_request(request: BuildRequest) -> None:
    if request.chat_format not in CHAT_FORMATS:
        raise UserError(f"--chat-format: {request.chat_format!r} is not a format; use one of {', '.join(CHAT_FORMATS)}")
    for flag, value, most in (("--row-tokens", request.row_tokens, MAX_ROW_TOKENS), ("--rows", request.rows, MAX_ROWS),
                              ("--seed", request.seed, MAX_SEED), ("--workers", request.workers, MAX_WORKERS)):
        least = 1 if flag in ("--row-tokens", "--rows") else 0
        if not least <= value <= most:
            raise UserError(f"{flag}: {value} is out of range; pass a whole number from {least} to {most:,}")


def _in_order(pool, workers: int, tasks):
    """Pool.imap's results, but it reads ahead only a few tasks (imap reads the whole window into the queue)."""
    pending: deque = deque()
    for task in tasks:
        pending.append(pool.apply_async(_encode_task, (task,)))
        if len(pending) > TASKS_IN_FLIGHT_PER_WORKER * workers:
            yield pending.popleft().get()
    while pending:
        yield pending.popleft().get()


@dataclass
class _Spill:
    ids: np.ndarray
    masks: np.ndarray
    starts: np.ndarray  # by permutation position - window start; -1: skipped
    lengths: np.ndarray


def _spill(results, directory: Path, position: np.ndarray, window_start: int, window_end: int,
           skipped: Counter, progress: Progress, on_progress) -> _Spill:
    """Append each task's tokens to files on disk and index them by permutation position."""
    starts = np.full(window_end - window_start, -1, np.int64)
    lengths = np.zeros(window_end - window_start, np.int64)
    written = 0
    ids_path, masks_path = directory / f"ids-{window_start}.bin", directory / f"masks-{window_start}.bin"
    with ids_path.open("wb") as ids_file, masks_path.open("wb") as masks_file:
        for indices, encoded in results:
            task_lengths, ids, masks = encoded.lengths, encoded.ids, encoded.masks
            skipped.update(encoded.reasons)
            slots = position[indices] - window_start
            kept = task_lengths >= 0
            starts[slots[kept]] = written + np.concatenate([[0], np.cumsum(task_lengths[kept])[:-1]])
            lengths[slots[kept]] = task_lengths[kept]
            ids_file.write(ids.tobytes())
            masks_file.write(masks.tobytes())
            written += len(ids)
            progress.tokens += len(ids)
            on_progress(progress)
    if not written:
        return _Spill(np.empty(0, np.int32), np.empty(0, np.uint8), starts, lengths)
    return _Spill(np.memmap(ids_path, np.int32, "r"), np.memmap(masks_path, np.uint8, "r"), starts, lengths)


def _pack(spill: _Spill, packer: RowPacker, progress: Progress, on_progress) -> None:
    """Feed the window's conversations to the packer in permutation order, PACK_TOKENS at a time."""
    slots = np.flatnonzero(spill.starts >= 0)
    lengths = spill.lengths[slots]
    ends = np.cumsum(lengths)  # in the window's stream
    first = 0
    while first < len(slots) and not packer.done:
        last = max(first + 1, int(np.searchsorted(ends, ends[first] - lengths[first] + PACK_TOKENS, "right")))
        chunk_lengths = lengths[first:last]
        starts_in_chunk = np.cumsum(chunk_lengths) - chunk_lengths
        gather = np.arange(chunk_lengths.sum()) + np.repeat(spill.starts[slots[first:last]] - starts_in_chunk,
                                                            chunk_lengths)
        chunk_stream_start = packer.stream_tokens
        packer.add(spill.ids[gather], spill.masks[gather])
        # A conversation counts as used when the rows written reach into it.
        progress.conversations += (int(np.searchsorted(chunk_stream_start + starts_in_chunk, packer.cut_tokens))
                                   if packer.done else last - first)
        progress.rows = packer.writer.rows
        on_progress(progress)
        first = last

