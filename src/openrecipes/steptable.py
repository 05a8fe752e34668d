"""The one step table every training log is read into, and the reading of the counts, numbers and timestamps
on a log line that every engine's reader shares.

Steps are numbered from 0, as Megatron-Bridge's golden values number them: a log's own numbering is converted
by its reader (Megatron's "iteration N" and torchtitan's "step: N" are step N - 1; slime already counts from 0).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime

from openrecipes.errors import UserError


@dataclass(frozen=True, slots=True)  # slots: a long run's table stays small
class Step:
    step: int  # numbered from 0
    where: str  # "path:line" of the line the step's figures were read from, for error messages
    step_time_s: float | None = None
    loss: float | None = None
    grad_norm: float | None = None
    memory_gib: float | None = None


@dataclass
class StepTable:
    log_format: str
    steps: list[Step]
    first_timestamp: datetime | None = None  # the earliest and latest timestamps anywhere in the logs
    last_timestamp: datetime | None = None
    planned_steps: int | None = None  # the run's length when the log states it (Megatron's "/ T", torchtitan)
    sources: list[str] = field(default_factory=list)
    # "path:line" where the log states the data ran out (torchtitan): the run truthfully ended at its last step
    out_of_data: str | None = None


# The first date and time on a line: Megatron's "[2026-10-14 10:00:00]", Python logging's "2026-11-30 01:04:02,276".
TIMESTAMP = re.compile(r"(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2})(?:[.,](\d{1,6}))?")
MAX_STEP_DIGITS = 15  # a step or iteration number is a count, not a 400-digit figure


def timestamp_of(line: str) -> datetime | None:
    match = TIMESTAMP.search(line)
    if not match:
        return None
    day, clock, fraction = match.groups()
    try:
        return datetime.fromisoformat(f"{day} {clock}.{(fraction or '0').ljust(6, '0')}")
    except ValueError:
        return None


def read_count(text: str, where: str, what: str) -> int:
    if len(text) > MAX_STEP_DIGITS:
        raise UserError(f"{where}: {what} {text[:20]}... has over {MAX_STEP_DIGITS} digits; the line is damaged")
    return int(text)


def read_number(text: str, where: str, what: str) -> float:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        raise UserError(f"{where}: {what} '{text}' is not a number; the line is damaged or cut off") from None
