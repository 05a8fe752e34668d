"""An answer in words: the lines the terminal prints (wrapped to its width) and the home page writes (site.js builds
the same words from the same fields: a test holds them equal)."""

from __future__ import annotations

import textwrap

from openrecipes.answer.model import Answer, Line
from openrecipes.catalog.facts import tokens_count
from openrecipes.figures import duration_text, number_text, usd_total_text

KIND_TITLES = {"measured": "Measured", "published": "Published", "predicted": "Planner"}


def heading(answer: Answer) -> str:
    q = answer.question
    asked = f" in {q.precision}" if q.precision else ""
    return f"{q.model} on {q.gpus:,} x {q.gpu_type}{asked}, {tokens_count(q.tokens)} tokens:"


def line_texts(line: Line, tokens: int) -> list[str]:
    """One line of the answer as its sentences: the figure, time and cost; what it is; how to get it; caveats."""
    span = (f" (likely {number_text(line.low, 0)}-{number_text(line.high, 0)})"
            if line.low is not None and line.high is not None else "")
    cost = usd_total_text(line.usd) if line.usd is not None else "no price"
    speed = number_text(line.tokens_per_s_per_gpu, 0)
    return [f"{KIND_TITLES[line.kind]} ({line.evidence}): {speed} tokens/s per GPU{span}; "
            f"{tokens_count(tokens)} tokens in {duration_text(line.hours)}, {cost}",
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
