"""How a planned layout is written: each torchtitan lever choice in its spellings, and the one long description of a
layout. They read only what the planner's `Layout` and the exported `PredictedLayout` share (their degrees' label
and their engine's lever block), and import nothing of the predictor, so the site writes an exported row as `plan`,
`tune` and the held-out table write a layout."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from openrecipes.catalog.model import ATTENTION_BACKENDS, FLOAT8_SCALINGS, KERNELS
from openrecipes.engines.levers import Levers


class Planned(Protocol):
    """A plan.layouts.Layout or an exported PredictedLayout, read through what they share."""

    @property
    def label(self) -> str: ...

    @property
    def recompute(self) -> str: ...

    @property
    def rows_per_microbatch(self) -> int: ...

    @property
    def levers(self) -> Levers: ...


@dataclass(frozen=True)
class LeverWords:
    """One torchtitan lever choice in each of its spellings."""

    field: str  # the layout field: kernels, attention or float8
    value: str  # the field's value in a recipe: liger-rmsnorm, sdpa-flash, tensorwise
    name: str  # measured factors and exported rows: liger-rmsnorm, attention sdpa-flash, float8 tensorwise
    short: str  # table cells, labels and (spaces as dashes) slugs: rmsnorm (in `liger rmsnorm+flce`), fp8 tensorwise


LEVER_WORDS: tuple[LeverWords, ...] = (
    *(LeverWords("kernels", kernel, kernel, short) for kernel, short in zip(
        KERNELS, ("rmsnorm", "swiglu", "rope", "flce"), strict=True)),
    *(LeverWords("attention", backend, f"attention {backend}", backend) for backend in ATTENTION_BACKENDS),
    *(LeverWords("float8", scaling, f"float8 {scaling}", f"fp8 {scaling}") for scaling in FLOAT8_SCALINGS),
)
_WORDS = {(words.field, words.value): words for words in LEVER_WORDS}


def _chosen(kernels: Sequence[str], attention: str | None, float8: str | None) -> list[LeverWords]:
    return ([_WORDS["kernels", k] for k in kernels] + ([_WORDS["attention", attention]] if attention else [])
            + ([_WORDS["float8", float8]] if float8 else []))


def names_of(kernels: Sequence[str], attention: str | None, float8: str | None) -> tuple[str, ...]:
    """The levers these choices pull, one name each: the kernels, `attention NAME`, `float8 SCALING`."""
    return tuple(words.name for words in _chosen(kernels, attention, float8))


def lever_names(levers: Levers) -> tuple[str, ...]:
    """The levers a block pulls, one name each (names_of)."""
    return names_of(levers.kernels, levers.attention, levers.float8)


def lever_parts(levers: Levers) -> list[str]:
    """The levers a block pulls in short: `liger rmsnorm+flce` (its kernels), the attention backend, `fp8 SCALING`."""
    chosen = _chosen(levers.kernels, levers.attention, levers.float8)
    kernels = [words.short for words in chosen if words.field == "kernels"]
    return ([f"liger {'+'.join(kernels)}"] if kernels else []) + [w.short for w in chosen if w.field != "kernels"]


def lever_slug(levers: Levers) -> str:
    """`-liger-rmsnorm+flce-sdpa-flash-fp8-tensorwise`: the short forms as a slug's tail."""
    return "".join(f"-{part.replace(' ', '-')}" for part in lever_parts(levers))


def lever_text(levers: Levers) -> str:
    """`, compiled, no reshard, liger flce, fp8 tensorwise` for a table cell: the levers a block pulls."""
    parts = (["compiled"] if levers.compile else []) + ([] if levers.reshard_after_forward else ["no reshard"])
    parts += lever_parts(levers)
    parts += [levers.low_precision] if levers.low_precision else []
    return "".join(f", {part}" for part in parts)


def describe(layout: Planned) -> str:
    """`TP1 PP1 DP2, none recompute, 1 row(s) a microbatch, offload 0.5, compiled, liger flce`: the layout's degrees
    (names.layout_label) and every setting the planner varies beyond them."""
    levers = layout.levers
    return (f"{layout.label}, {layout.recompute} recompute, {layout.rows_per_microbatch} row(s) a microbatch"
            + (f", offload {levers.offload_fraction:g}" if levers.offload_fraction else "") + lever_text(levers))


# The terse marks of a table's layout label (short_label), each a word `plan --layout` reads back
# (openrecipes.plan.given), with what each means for the legend under the table.
RECOMPUTE_MARKS = {"none": "", "selective": "sel", "full": "full"}
COMPILED, NO_RESHARD, OFFLOAD = "C", "NR", "off"
MARK_MEANINGS = {"MB": "rows per microbatch", "sel": "selective recompute", "full": "full recompute",
                 COMPILED: "compiled", NO_RESHARD: "no reshard after forward",
                 OFFLOAD: "share of the optimizer on the host",
                 **{words.short.replace(" ", "-"): words.name for words in LEVER_WORDS}}


def lever_marks(levers: Levers) -> list[str]:
    """The levers a block pulls as single words: `C`, `NR`, each kernel's short name, the attention backend,
    `fp8-SCALING`, `off0.5`, Megatron's low precision."""
    chosen = _chosen(levers.kernels, levers.attention, levers.float8)
    return (([COMPILED] if levers.compile else []) + ([] if levers.reshard_after_forward else [NO_RESHARD])
            + [words.short.replace(" ", "-") for words in chosen]
            + ([f"{OFFLOAD}{levers.offload_fraction:g}"] if levers.offload_fraction else [])
            + ([levers.low_precision] if levers.low_precision else []))


def short_label(layout: Planned) -> str:
    """`TP1 PP2 VP3 DP1 MB1 sel C flce`: the degrees (names.layout_label), rows per microbatch, recompute and
    levers in terse marks, one line of a table at 80 columns; `plan --layout` reads it back."""
    recompute = RECOMPUTE_MARKS[layout.recompute]
    return " ".join([layout.label, f"MB{layout.rows_per_microbatch}", *([recompute] if recompute else []),
                     *lever_marks(layout.levers)])


def marks_legend(labels: Sequence[str]) -> str:
    """What the marks used in these labels mean: `MB: rows per microbatch, C: compiled, ...`."""
    used = {word.rstrip("0123456789.") for label in labels for word in label.split()}
    return ", ".join(f"{mark}: {meaning}" for mark, meaning in MARK_MEANINGS.items() if mark in used)
