"""An answer in words: the lines the terminal prints (wrapped to its width) and the home page writes (site.js builds
the same words from the same fields: a test holds them equal)."""

from __future__ import annotations

import textwrap
from decimal import ROUND_HALF_UP, Decimal

from openrecipes.answer.model import Answer, Line
from openrecipes.catalog.facts import tokens_count

KIND_TITLES = {"measured": "Measured", "published": "Published", "predicted": "Planner"}


def number(value: float, decimals: int) -> str:
    """`value` with thousands separators, rounded as the browser's toLocaleString rounds (a tie away from zero, on
    the float's shortest decimal, as ICU reads it), so that the page and the terminal print the same digits."""
    rounded = Decimal(repr(value)).quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP)
    return f"{rounded:,.{decimals}f}"


def duration(hours: float) -> str:
    """A wall time as a reader plans with it: minutes under an hour, hours under two days, then days (the site's)."""
    if hours < 1:
        return f"{number(hours * 60, 0)} min"
    return f"{number(hours, 1)} h" if hours < 48 else f"{number(hours / 24, 1)} days"


def usd_total(usd: float) -> str:
    return f"${number(usd, 0)}" if usd >= 100 else f"${number(usd, 2)}"


def heading(answer: Answer) -> str:
    q = answer.question
    asked = f" in {q.precision}" if q.precision else ""
    return f"{q.model} on {q.gpus:,} x {q.gpu_type}{asked}, {tokens_count(q.tokens)} tokens:"


def line_texts(line: Line, tokens: int) -> list[str]:
    """One line of the answer as its sentences: the figure, time and cost; what it is; how to get it; caveats."""
    span = (f" (likely {number(line.low, 0)}-{number(line.high, 0)})" if line.low is not None and line.high is not None
            else "")
    cost = usd_total(line.usd) if line.usd is not None else "no price"
    speed = number(line.tokens_per_s_per_gpu, 0)
    return [f"{KIND_TITLES[line.kind]} ({line.evidence}): {speed} tokens/s per GPU{span}; "
            f"{tokens_count(tokens)} tokens in {duration(line.hours)}, {cost}",
            f"{line.name}, {line.precision}: {line.layout}",
            f"get it: {line.get}",
            *(f"caveat: {caveat}" for caveat in line.caveats)]


def answer_texts(answer: Answer) -> list[list[str]]:
    """The heading, each line's sentences, then each reason something is not offered."""
    return [[heading(answer)], *(line_texts(line, answer.question.tokens) for line in answer.lines),
            *([f"not offered: {reason}"] for reason in answer.not_offered)]


def wrapped(answer: Answer, width: int) -> str:
    """The answer for a terminal `width` columns wide: each line's first sentence flush, the rest indented."""
    out = []
    for number, block in enumerate(answer_texts(answer)):
        first, *rest = block
        lead = f"{number}. " if 0 < number <= len(answer.lines) else ""
        out.append(textwrap.fill(lead + first, width, subsequent_indent="   ", break_on_hyphens=False))
        out += [textwrap.fill(text, width, initial_indent="   ", subsequent_indent="     ", break_on_hyphens=False,
                              break_long_words=False) for text in rest]
    return "\n".join(out)
