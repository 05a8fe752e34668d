"""The answer's typed objects, on both sides of derived/answers/<model>.json: the site reads them without running
the planner, the terminal computes them live, and both assemble an `Answer` from them the same way."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict

from openrecipes.errors import UserError

LineKind = Literal["measured", "published", "predicted"]
KINDS: tuple[LineKind, ...] = ("measured", "published", "predicted")  # the order an answer's lines come in
DEFAULT_TOKENS = 10**9
BUDGET_UNITS = {"": 1, "K": 10**3, "M": 10**6, "B": 10**9, "T": 10**12}
BUDGET = re.compile(r"(\d+(?:\.\d+)?)([KMBT]?)", re.IGNORECASE)
MAX_TOKENS = 10**15


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Question(Frozen):
    model: str
    gpu_type: str
    gpus: int
    precision: str | None  # a precision family, upper case (BF16, FP8, MXFP8, NVFP4); None: any
    tokens: int  # the budget the wall time and cost are for


class Line(Frozen):
    """One way to train at the asked point."""
    kind: LineKind
    evidence: str  # re-derived, author-reported, audited, failed or predicted (catalog/evidence.py)
    name: str  # the recipe or entry, or the predicted layout's engine
    slug: str | None  # the catalog entry (its page on the site); None for a prediction
    precision: str
    layout: str  # the layout label and its workload
    tokens_per_s_per_gpu: float
    low: float | None  # a prediction's likely range
    high: float | None
    hours: float  # wall time for the budget
    usd: float | None  # cost for the budget; None: no instance price for the GPU type
    get: str  # how to get a runnable recipe: its file and `openrecipes show`, or the `plan emit` command
    caveats: tuple[str, ...] = ()


class Answer(Frozen):
    question: Question
    lines: tuple[Line, ...]
    not_offered: tuple[str, ...]  # why a kind of line is missing (does not fit, no engine, no peak, no price, ...)


class PredictedLine(Frozen):
    """The planner's best runnable layout on one engine, before the budget prices it."""
    engine: str
    layout: str
    tokens_per_s_per_gpu: float
    low: float
    high: float
    get: str


class PredictedPoint(Frozen):
    """What the planner offers at one GPU type and count: its lines (fastest first) and why any engine offers none."""
    gpu_type: str
    gpus: int
    lines: tuple[PredictedLine, ...]
    not_offered: tuple[str, ...]


class AnswerGrid(Frozen):
    """derived/answers/<model>.json: the planner's part of every answer the site offers for one model."""
    fingerprint: str
    model: str
    points: tuple[PredictedPoint, ...]


def parse_tokens(text: str) -> int:
    """A token budget as typed: 1B, 500M, 2T, 1.5B or a plain count."""
    found = BUDGET.fullmatch(text.strip())
    if found is None:
        raise UserError(f"--tokens {text}: give a token count such as 1B, 500M or 2T")
    tokens = round(float(found.group(1)) * BUDGET_UNITS[found.group(2).upper()])
    if not 1 <= tokens <= MAX_TOKENS:
        raise UserError(f"--tokens {text}: give 1 to 1000T tokens")
    return tokens
