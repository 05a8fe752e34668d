"""Strict JSON both ways.

Written (`--json`): strict JSON only. Python's json writes NaN and Infinity, which no JSON parser accepts and which
would smuggle a figure that is not a number into a tool's input; a non-finite float is written as null.
pydantic-core writes it (dicts, lists and pydantic models alike) in Rust: Python's own encoder falls back to pure
Python whenever it indents, which made `plan --top 0 --json` (21 MB) spend more time writing than planning.

Read (`read_json`, for JSON kept in stored sources): bounded, so a damaged or hostile line is one error naming its
file and line, never a traceback. Python's json recurses once per level (text nested thousands deep overflows the
stack), refuses integers of over 4,300 digits with a ValueError of its own, reads 1e999 as infinity and accepts
NaN and Infinity; every number read here is finite and at most 2^53 in size (a count stays exact as a float, so no
figure computed from it can overflow).
"""

from __future__ import annotations

import json
import math
from typing import Any

import pydantic_core

from openrecipes.errors import UserError
from openrecipes.textfile import json_depth

MAX_JSON_DEPTH = 16  # a log event is a flat object with one level of metadata
MAX_JSON_NUMBER = 2**53
_MAX_DIGITS = len(str(MAX_JSON_NUMBER))


def json_text(value: Any, indent: int | None = 2) -> str:
    return pydantic_core.to_json(value, indent=indent, ensure_ascii=True, inf_nan_mode="null").decode()


def read_json(text: str, where: str, depth: int = MAX_JSON_DEPTH) -> Any:
    """One JSON value: nesting over `depth`, a number that is not finite or over 2^53 in size, NaN, Infinity or
    damaged text is a UserError naming `where` (the file and line)."""
    if text.count("[") + text.count("{") > depth and json_depth(text) > depth:
        raise UserError(f"{where}: JSON nested deeper than {depth} levels; the line is damaged, re-store it")

    def beyond(text: str) -> UserError:
        shown = text if len(text) <= 20 else text[:17] + "..."
        return UserError(f"{where}: the number {shown} is not finite or beyond {MAX_JSON_NUMBER:,} in size; the line "
                         "is damaged, re-store it")

    def whole(text: str) -> int:
        if len(text.lstrip("-")) > _MAX_DIGITS or abs(int(text)) > MAX_JSON_NUMBER:
            raise beyond(text)
        return int(text)

    def decimal(text: str) -> float:
        value = float(text)
        if not math.isfinite(value) or abs(value) > MAX_JSON_NUMBER:
            raise beyond(text)
        return value

    def constant(name: str) -> float:
        raise UserError(f"{where}: {name} is not a JSON number; the line is damaged, re-store it")

    try:
        return json.loads(text, parse_int=whole, parse_float=decimal, parse_constant=constant)
    except json.JSONDecodeError as error:
        raise UserError(f"{where}: not JSON ({error.msg}); the line is damaged or cut off, re-store it") from None
