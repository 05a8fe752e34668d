"""Records read in batches by Arrow mean what json.loads reads from each line; repeated conversations reuse their
encoding with the same bytes."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest
from conftest import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openrecipes.rows.encode import make_encoder, parse_record
from openrecipes.rows.memo import ConversationMemo, encode_parsed
from openrecipes.rows.records import MESSAGES_SCHEMA, arrow_messages

TEXT = st.text(st.characters(codec="utf-8"), max_size=12) | st.sampled_from(["", " ", "\n", "user", "assistant"])
# Mostly values of the shape Arrow reads, sometimes one of another type (Arrow then declines the batch).
ROLE = st.sampled_from(["user", "assistant", "system", "wizard", ""]) | st.none() | st.integers(0, 0)
CONTENT = TEXT | TEXT | st.none() | st.integers(0, 0) | st.lists(TEXT, max_size=1)
MESSAGE = st.fixed_dictionaries({}, optional={"role": ROLE, "content": CONTENT, "name": TEXT}) | st.none()
RECORD = st.fixed_dictionaries({}, optional={
    "id": st.integers() | TEXT, "messages": st.lists(MESSAGE, max_size=4) | st.lists(MESSAGE, max_size=4) | st.none()
    | TEXT, "source": st.lists(st.integers() | TEXT, max_size=2)})
# Ways a line can be broken or odd: each one is a way Arrow's reader and json.loads could disagree.
DAMAGE = st.sampled_from([
    lambda line: b"null", lambda line: b"  " + line, lambda line: b"\xef\xbb\xbf" + line,
    lambda line: line + b" " + line, lambda line: line + b"\r" + line, lambda line: line[:-1],
    lambda line: line.replace(b"\"role\"", b"\"role\": \"user\", \"role\"", 1),
    lambda line: line.replace(b"\"messages\"", b"\"messages\": null, \"messages\"", 1),
    lambda line: line.replace(b"\"content\": \"", b"\"content\": \"\\ud800", 1),
    lambda line: line.replace(b"\"content\": \"", b"\"content\": \"\xff", 1),
    lambda line: line.replace(b"\"content\": \"", b"\"content\": \"\t", 1),
    lambda line: line.replace(b"{", b"{\"deep\": " + b"[" * 1200 + b"]" * 1200 + b", ", 1),
    lambda line: line.replace(b"{", b"{\"long\": 1" + b"0" * 5000 + b", ", 1),
    lambda line: line.replace(b"{", b"{\"float\": 1." + b"0" * 5000 + b", ", 1),
    lambda line: line.replace(b"{", b"{\"nan\": NaN, ", 1),
    lambda line: b"[" + line + b"]", lambda line: b"5", lambda line: b"\"text\"",
])


@st.composite
def lines(draw) -> bytes:
    record = draw(RECORD)
    line = json.dumps(record, ensure_ascii=draw(st.booleans())).encode("utf-8", "surrogatepass")
    return (draw(DAMAGE)(line) if draw(st.integers(0, 9)) == 0 else line) + b"\n"


@settings(max_examples=examples(400), deadline=None)
@given(batch=st.lists(lines(), min_size=1, max_size=6))
def test_arrow_reads_each_line_as_json_loads_does_or_declines(batch):
    messages = arrow_messages(batch)
    if messages is None:  # the batch is parsed line by line
        return
    assert len(messages) == len(batch)
    assert [parse_record(value) for value in messages.to_pylist()] == [parse_record(line) for line in batch]


def test_well_formed_lines_are_read_by_arrow():
    record = {"id": 1, "messages": [{"role": "user", "content": "hé"},
                                    {"role": "assistant", "content": "ok", "extra": [1]}]}
    batch = [json.dumps(record).encode() + b"\n",
             b'{"messages": [null, {"role": "user"}]}\n', b'{"id": 2}']
    assert arrow_messages(batch).to_pylist() == [[{"role": "user", "content": "hé"},
                                                  {"role": "assistant", "content": "ok"}],
                                                 [None, {"role": "user", "content": None}], None]


def test_parquet_messages_of_another_shape_are_read_value_by_value():
    assert arrow_messages(pa.array([["a"]])) is None
    assert arrow_messages(pa.array([[{"role": "user", "content": 1}]])) is None
    good = pa.array([[{"content": "x", "role": "user"}]])
    assert arrow_messages(good) is good


@pytest.fixture(scope="module")
def encoder(qwen3):
    return make_encoder(qwen3, "qwen3", "<|endoftext|>")


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(records=st.lists(st.sampled_from([
    [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
    [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello there"}],
    [{"role": "assistant", "content": "hi"}, {"role": "user", "content": "hello"}],
    [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}],
    [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}],
    [{"role": "user", "content": " "}, {"role": "assistant", "content": "hi"}],
    [{"role": None, "content": "hi"}], [None], [], None]), min_size=1, max_size=12), split=st.integers(1, 11))
def test_a_repeated_conversation_gets_the_bytes_encoding_it_again_gives(encoder, records, split):
    memo = ConversationMemo(encoder)
    arrays = [pa.array(part, MESSAGES_SCHEMA.field("messages").type) for part in (records[:split], records[split:])
              if part]
    remembered = [memo.encode(array) for array in arrays]
    fresh = [encode_parsed(encoder, [parse_record(value) for value in array.to_pylist()]) for array in arrays]
    for got, want in zip(remembered, fresh, strict=True):
        assert got.reasons == want.reasons and (got.lengths == want.lengths).all()
        assert np.array_equal(got.ids, want.ids) and np.array_equal(got.masks, want.masks)
        assert got.ids.dtype == want.ids.dtype and got.masks.dtype == want.masks.dtype
