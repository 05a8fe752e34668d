"""The row builder: permutation, EOS joins, exact rows, skips, atomic output, determinism."""

from __future__ import annotations

import json
from pathlib import Path
from unittest.mock import patch

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import examples, openrecipes
from hypothesis import given, settings
from hypothesis import strategies as st

from openrecipes.errors import UserError
from openrecipes.rows import output, sources
from openrecipes.rows.build import BuildRequest, build_rows
from openrecipes.rows.encode import make_encoder
from openrecipes.rows.manifest import RowsManifest

FIXTURES = Path(__file__).parent / "fixtures" / "rows"
# A conversation whose JSON escapes a lone surrogate: text no UTF-8 can hold.
HALF_A_CHARACTER = ('{"messages": [{"role": "user", "content": "half \\ud800 a character"}, '
                    '{"role": "assistant", "content": "ok"}]}\n')


def _build(qwen3: Path, out: Path, conversations: Path = FIXTURES / "conversations.jsonl", **overrides) -> dict:
    settings = dict(conversations=conversations, tokenizer=qwen3, chat_format="qwen3", row_tokens=32, rows=1000,
                    seed=7, out=out, workers=0)
    return build_rows(BuildRequest(**{**settings, **overrides}))


def _rows(out: Path) -> tuple[np.ndarray, np.ndarray]:
    table = pq.read_table(out / "rows.parquet")
    assert table.schema.field("input_ids").type == pa.list_(pa.int32())
    assert table.schema.field("loss_mask").type == pa.list_(pa.uint8())
    return (np.array(table.column("input_ids").to_pylist(), np.int32),
            np.array(table.column("loss_mask").to_pylist(), np.uint8))


def test_rows_cut_the_permuted_eos_joined_stream_into_exact_rows(qwen3, tmp_path):
    manifest = _build(qwen3, tmp_path)
    messages = [json.loads(line)["messages"] for line in (FIXTURES / "conversations.jsonl").read_text().splitlines()]
    order = np.random.Generator(np.random.PCG64(7)).permutation(len(messages))
    # the build's own encoder (its tokens are the reference's: tests/test_rows_quicktok.py)
    encoded = make_encoder(qwen3, "qwen3", "<|endoftext|>").encode([messages[i] for i in order])
    stream_ids = np.concatenate([ids for ids, _ in encoded])
    stream_mask = np.concatenate([mask for _, mask in encoded])
    assert all(ids[-1] == 151643 and (ids[:-1] != 151643).all() for ids, _ in encoded)  # one EOS per join
    full_rows = len(stream_ids) // 32
    ids, mask = _rows(tmp_path)
    assert ids.shape == (full_rows, 32) and manifest.rows == full_rows  # the trailing partial row is dropped
    assert (ids == stream_ids[:full_rows * 32].reshape(full_rows, 32)).all()
    assert (mask == stream_mask[:full_rows * 32].reshape(full_rows, 32)).all()
    assert manifest.data_ran_out and manifest.padding_tokens == 0
    assert manifest.supervised_token_ratio == round(mask.sum() / mask.size, 6)


def test_stops_at_the_requested_rows(qwen3, tmp_path):
    assert _build(qwen3, tmp_path, rows=3).rows == 3
    assert _rows(tmp_path)[0].shape == (3, 32)


def test_rows_without_targets_are_skipped(qwen3, tmp_path):
    conversations = tmp_path / "long-prompt.jsonl"
    conversations.write_text(json.dumps({"messages": [{"role": "user", "content": "word " * 200},
                                                      {"role": "assistant", "content": "yes " * 40}]}) + "\n")
    manifest = _build(qwen3, tmp_path / "out", conversations, row_tokens=16)
    assert manifest.rows_skipped_without_target >= 10
    assert _rows(tmp_path / "out")[1].any(axis=1).all()


def test_bad_conversations_are_skipped_and_counted_by_reason(qwen3, tmp_path):
    manifest = _build(qwen3, tmp_path, FIXTURES / "broken.jsonl", row_tokens=8)
    assert manifest.conversations_skipped == {
        "broken_json": 1, "empty_content": 1, "missing_messages": 1, "missing_role": 1, "no_assistant_turn": 1,
        "non_string_content": 1, "not_utf8": 1, "unknown_role": 1}
    assert manifest.source.conversations == 10 and manifest.rows >= 1


def test_same_inputs_give_the_same_bytes_and_skips_in_process_and_with_workers(qwen3, tmp_path):
    conversations = tmp_path / "conversations.jsonl"
    conversations.write_text((FIXTURES / "conversations.jsonl").read_text() + HALF_A_CHARACTER)
    first = _build(qwen3, tmp_path / "a", conversations)
    second = _build(qwen3, tmp_path / "b", conversations, workers=2)
    assert first.rows_sha256 == second.rows_sha256
    assert first.parquet_sha256 == second.parquet_sha256
    assert (tmp_path / "a" / "rows.parquet").read_bytes() == (tmp_path / "b" / "rows.parquet").read_bytes()
    assert first.conversations_skipped == second.conversations_skipped == {"not_utf8": 1}
    assert _build(qwen3, tmp_path / "c", conversations, seed=8).rows_sha256 != first.rows_sha256


def test_a_tulu_parquet_gives_the_same_rows_as_jsonl(qwen3, tmp_path):
    records = [json.loads(line) for line in (FIXTURES / "conversations.jsonl").read_text().splitlines()]
    pq.write_table(pa.Table.from_pylist(records), tmp_path / "tulu.parquet")
    assert (_build(qwen3, tmp_path / "p", tmp_path / "tulu.parquet").rows_sha256
            == _build(qwen3, tmp_path / "j").rows_sha256)


def test_a_failed_build_leaves_the_previous_rows_untouched(qwen3, tmp_path, monkeypatch):
    _build(qwen3, tmp_path)
    before = (tmp_path / "rows.parquet").read_bytes()

    def crash(self, ids, mask):
        raise KeyboardInterrupt

    monkeypatch.setattr(output.RowsWriter, "add", crash)
    with pytest.raises(KeyboardInterrupt):
        _build(qwen3, tmp_path, seed=99)
    assert (tmp_path / "rows.parquet").read_bytes() == before
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        ".rows.lock", "manifest.json", "rows-current", "rows.parquet"]  # the failed build's folder is gone


def test_bad_input_is_one_line_and_exit_2(qwen3, tmp_path):
    run = openrecipes("rows", "build", "--conversations", tmp_path / "missing.jsonl", "--tokenizer", qwen3,
                      "--chat-format", "qwen3", "--rows", "1", "--seed", "1", "--out", tmp_path / "o")
    assert run.returncode == 2 and run.stdout == ""  # no progress line before the error
    assert run.stderr.strip().count("\n") == 0 and "missing.jsonl: no such file" in run.stderr
    wrong = openrecipes("rows", "build", "--conversations", FIXTURES / "conversations.jsonl", "--tokenizer", qwen3,
                        "--chat-format", "gpt_oss", "--rows", "1", "--seed", "1", "--out", tmp_path / "o")
    assert wrong.returncode == 2 and "no <|start|> token" in wrong.stderr and "Traceback" not in wrong.stderr


def test_a_tokenizer_workers_cannot_load_fails_the_build_instead_of_hanging_it(qwen3, tmp_path):
    broken = tmp_path / "broken-tokenizer"
    broken.mkdir()
    (broken / "tokenizer.json").write_text("{not json")
    with pytest.raises(UserError, match="tokenizer.json: not a tokenizers file"):
        _build(broken, tmp_path / "out", workers=2)


def test_rows_demo_builds_llama3_rows(tmp_path):
    run = openrecipes("rows", "demo", "--chat-format", "llama3", "--rows", "2", "--row-tokens", "512", "--workers", "0",
                      "--out", tmp_path)
    assert run.returncode == 0, run.stderr
    manifest = RowsManifest.read(tmp_path / "manifest.json")
    assert (manifest.chat_format, manifest.eos_token, manifest.rows) == ("llama3", "<|end_of_text|>", 2)
    ids, mask = _rows(tmp_path)
    assert ids.shape == (2, 512) and ids[0, 0] == 128000 and mask.any(axis=1).all()  # <|begin_of_text|> first


@settings(max_examples=examples(300), deadline=None)
@given(pieces=st.lists(st.sampled_from([b"", b" ", b"\t", b"\n", b"\r\n", b"x", b"{}", b"\x0b", b"\xc3\xa9", b"\n\n",
                                        b" \n", b"\x0c"]), max_size=60),
       chunk=st.sampled_from([1, 2, 3, 7, 1 << 22]))
def test_the_jsonl_index_finds_every_non_blank_line(tmp_path_factory, pieces, chunk):
    path = tmp_path_factory.mktemp("index") / "lines.jsonl"
    path.write_bytes(b"".join(pieces))
    expected, position = [], 0
    with path.open("rb") as lines:
        for line in lines:  # the reference: Python's own lines, blank when bytes.strip() leaves nothing
            if line.strip():
                expected.append((position, position + len(line)))
            position += len(line)
    with patch.object(sources, "INDEX_CHUNK_BYTES", chunk):
        starts, ends = sources._line_index(path)
    assert list(zip(starts.tolist(), ends.tolist(), strict=False)) == expected


def test_an_escaped_half_character_skips_its_conversation(qwen3, tmp_path):
    # JSON can escape a lone surrogate ("\ud800"), which no UTF-8 text can hold: that conversation is skipped as
    # not_utf8, the others are built (in workers too: test_same_inputs_give_the_same_bytes_and_skips_...).
    conversations = tmp_path / "surrogate.jsonl"
    good = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello there"}]}
    conversations.write_text(HALF_A_CHARACTER + json.dumps(good) + "\n")
    manifest = _build(qwen3, tmp_path / "out", conversations, row_tokens=8)
    assert manifest.conversations_skipped == {"not_utf8": 1}
    assert manifest.rows >= 1
