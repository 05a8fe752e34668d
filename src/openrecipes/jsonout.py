"""JSON for `--json`: strict JSON only. Python's json writes NaN and Infinity, which no JSON parser accepts and
which would smuggle a figure that is not a number into a tool's input; a non-finite float is written as null."""

from __future__ import annotations

import json
import math
from typing import Any


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    return value


def json_text(value: Any, indent: int | None = 2) -> str:
    return json.dumps(_finite(value), indent=indent, allow_nan=False)
