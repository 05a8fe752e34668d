"""A batch of raw records as one Arrow `messages` column: JSONL lines parsed in one call of Arrow's JSON reader.

The column must hold exactly what encode.parse_record reads from each record. Arrow's reader and json.loads agree
on well-formed lines and both refuse most broken ones (Arrow then raises, and the batch is parsed line by line).
Where Arrow is more lenient the batch is parsed line by line too: a line that does not open with `{` (Arrow reads
a top-level `null` as an empty record), a byte-order mark, bytes that are not UTF-8, nesting deeper than
json.loads recurses, an integer longer than Python reads, or two records on one line.
"""

from __future__ import annotations

import sys

import numpy as np
import pyarrow as pa
import pyarrow.json as pa_json

MESSAGES_SCHEMA = pa.schema([("messages", pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())])))])
_PARSE = pa_json.ParseOptions(explicit_schema=MESSAGES_SCHEMA, unexpected_field_behavior="ignore")
_BOM = b"\xef\xbb\xbf"
# json.loads recurses once per nested container and stops near the interpreter's recursion limit; a line with
# fewer brackets than this cannot reach it.
MAX_BRACKETS = 900
MAX_INT_DIGITS = sys.get_int_max_str_digits() or sys.maxsize  # int() refuses a longer integer
_DIGIT = np.zeros(256, np.int32)
_DIGIT[list(b"0123456789")] = 1


def arrow_messages(records: list[bytes] | pa.Array) -> pa.Array | None:
    """The records' `messages` values as an Arrow list of {role, content} structs, one per record; None when the
    batch must be parsed line by line (see the module's docstring)."""
    if isinstance(records, list):
        return _jsonl_messages(records)
    message = records.type.value_type if pa.types.is_list(records.type) else None
    if message is None or not pa.types.is_struct(message) or any(
            message.get_field_index(name) < 0 or not pa.types.is_string(message.field(name).type)
            for name in ("role", "content")):
        return None
    return records


def _jsonl_messages(lines: list[bytes]) -> pa.Array | None:
    block = b"".join(line if line.endswith(b"\n") else line + b"\n" for line in lines)
    if any(line[:1] != b"{" for line in lines) or _BOM in block or _not_utf8(block) or _too_deep_or_long(lines):
        return None
    try:
        table = pa_json.read_json(pa.py_buffer(block), read_options=pa_json.ReadOptions(use_threads=False),
                                  parse_options=_PARSE)
    except pa.ArrowInvalid:  # broken JSON, or a value of another type than the schema's: json.loads will say
        return None
    if table.num_rows != len(lines):  # two records on one line
        return None
    return table.column("messages").combine_chunks()


def _not_utf8(block: bytes) -> bool:
    if block.isascii():
        return False
    try:
        block.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def _too_deep_or_long(lines: list[bytes]) -> bool:
    """Whether some line may nest deeper than json.loads recurses or hold an integer longer than Python reads."""
    for line in lines:
        if len(line) > MAX_BRACKETS and line.count(b"[") + line.count(b"{") > MAX_BRACKETS:
            return True
        if len(line) > MAX_INT_DIGITS:
            digits = np.concatenate([[0], np.cumsum(_DIGIT[np.frombuffer(line, np.uint8)])])
            run = MAX_INT_DIGITS + 1
            if (digits[run:] - digits[:-run] == run).any():
                return True
    return False
