"""A recipe's `stack:` against the versions its run printed (the `openrecipes stack:` line)."""

from __future__ import annotations

from collections.abc import Iterator

from openrecipes.audit.evidence import Finding
from openrecipes.catalog.model import Recipe
from openrecipes.engines.torchtitan.engine import PACKAGE
from openrecipes.measure.stack import StackLine

# The stack: fields a stack line re-derives, and the name it prints each under.
STACK_FIELDS = {"pytorch": "torch", "cuda": "cuda", "nccl": "nccl", PACKAGE: PACKAGE, "python": "python"}


def compare_stack(recipe: Recipe, line: StackLine, source: str) -> Iterator[Finding]:
    for field, printed in STACK_FIELDS.items():
        written, derived = getattr(recipe.stack, field), getattr(line, printed)
        if written != derived:
            yield Finding(f"stack.{field}", written, derived, f"is {written} but {source} gives {derived}")
    if line.gpu is not None and recipe.gpu.type.lower() not in line.gpu.lower().split():
        yield Finding("gpu.type", recipe.gpu.type, line.gpu, f"is {recipe.gpu.type} but {source} names {line.gpu}")
