"""A recipe's `stack:` against the versions its run printed (the `openrecipes stack:` line)."""

from __future__ import annotations

from collections.abc import Iterator

from openrecipes.audit.evidence import Finding
from openrecipes.catalog.model import Recipe, Stack
from openrecipes.engines.registry import engine_named
from openrecipes.measure.stack import StackLine


def stack_fields(recipe: Recipe) -> dict[str, str]:
    """The recipe's stack: fields a stack line re-derives, with the name it prints each under: PyTorch, CUDA, NCCL,
    its engine's package (a stack: field of the same name) and Python."""
    package = engine_named(recipe.engine).runner.package
    own = {package: package} if package is not None and package in Stack.model_fields else {}
    return {"pytorch": "torch", "cuda": "cuda", "nccl": "nccl", **own, "python": "python"}


def compare_stack(recipe: Recipe, line: StackLine, source: str) -> Iterator[Finding]:
    for field, printed in stack_fields(recipe).items():
        written, derived = getattr(recipe.stack, field), line.get(printed)
        if written != derived:
            yield Finding(f"stack.{field}", written, derived, f"is {written} but {source} gives {derived}")
    if line.gpu is not None and recipe.gpu.type.lower() not in line.gpu.lower().split():
        yield Finding("gpu.type", recipe.gpu.type, line.gpu, f"is {recipe.gpu.type} but {source} names {line.gpu}")
