"""JSON for `--json`: strict JSON only. Python's json writes NaN and Infinity, which no JSON parser accepts and
which would smuggle a figure that is not a number into a tool's input; a non-finite float is written as null.

pydantic-core writes it (dicts, lists and pydantic models alike) in Rust: Python's own encoder falls back to pure
Python whenever it indents, which made `plan --top 0 --json` (21 MB) spend more time writing than planning."""

from __future__ import annotations

from typing import Any

import pydantic_core


def json_text(value: Any, indent: int | None = 2) -> str:
    return pydantic_core.to_json(value, indent=indent, ensure_ascii=True, inf_nan_mode="null").decode()
