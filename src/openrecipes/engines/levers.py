"""A layout's levers: the settings beyond its degrees, typed per engine (engines/<name>/levers.py).

Each engine's block holds the levers it has as fields, so a layout cannot pull one its engine lacks (a compiled
Megatron layout, a torchtitan one with optimizer offload). The planner's engine-independent core (plan/) reads any
block through `Levers`: an engine answers a question it has no lever for with what it always does (Megatron never
compiles; torchtitan never offloads the optimizer). `levers_of` is the one conversion into a block, from the
values a recipe, a record entry, a reference row, a written layout or an exported planner row states.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Protocol

from openrecipes.errors import UserError


class Levers(Protocol):
    """What the planner's core reads of an engine's lever block: a frozen dataclass whose fields are the engine's
    own levers, each defaulting to unpulled, and whose properties answer the rest."""

    @property
    def compile(self) -> bool:
        """torch.compile runs each block and the loss."""
        ...

    @property
    def reshard_after_forward(self) -> bool:
        """FSDP frees a layer's gathered weights after its forward (and gathers them again for the backward)."""
        ...

    @property
    def kernels(self) -> tuple[str, ...]:
        """Liger-Kernel fused kernels, in the recipes' canonical order."""
        ...

    @property
    def attention(self) -> str | None:
        """The attention backend pinned; None: the engine's default."""
        ...

    @property
    def float8(self) -> str | None:
        """torchao float8 training's scaling (tensorwise, rowwise); None: BF16."""
        ...

    @property
    def low_precision(self) -> str | None:
        """Transformer Engine's precision of the blocks' GEMMs (fp8, mxfp8, nvfp4, ...); None: BF16."""
        ...

    @property
    def offload_fraction(self) -> float:
        """The share of the optimizer's states and step on the host."""
        ...

    @property
    def grad_reduce_bf16(self) -> bool:
        """Gradients kept and reduced in BF16 (2 bytes) instead of FP32."""
        ...

    @property
    def megatron_fsdp(self) -> bool:
        """Megatron-FSDP in place of the distributed optimizer: every state sharded over DP x CP."""
        ...


# Each lever unpulled: what a source that does not state it means.
UNPULLED: dict[str, object] = {"compile": False, "reshard_after_forward": True, "kernels": (), "attention": None,
                               "float8": None, "low_precision": None, "offload_fraction": 0.0,
                               "grad_reduce_bf16": False, "megatron_fsdp": False}


@functools.cache  # a handful of block classes, asked for every exported row read back
def _own(block: type[Levers]) -> frozenset[str]:
    return frozenset(field.name for field in dataclasses.fields(block))  # type: ignore[arg-type]


def lever_values(levers: Levers) -> dict[str, object]:
    """Every lever's value as the block states it (UNPULLED's names): what an exported row writes."""
    return {name: getattr(levers, name) for name in UNPULLED}


def has_lever(block: type[Levers], name: str) -> bool:
    """Whether the block holds the lever as a setting of its own (not as what its engine always does)."""
    return name in _own(block)


def levers_of(block: type[Levers], engine: str, **stated: object) -> Levers:
    """The engine's block of the levers a source states (any of UNPULLED's names). A lever the engine lacks may
    only be stated unpulled or as the engine always has it; else a UserError names it and the engine. A list (a
    recipe's or a row's kernels) becomes a tuple, so blocks compare and hash."""
    values = _normal(stated)
    own = _own(block)
    if missing := _lacking(block, values):
        raise UserError(f"{missing[0]} = {values[missing[0]]!r}: {engine} has no such lever ({', '.join(sorted(own))} "
                        "are its own)")
    return block(**{name: value for name, value in values.items() if name in own})


def lacking(block: type[Levers], **stated: object) -> list[str]:
    """The stated levers the block lacks, stated otherwise than its engine always has them."""
    return _lacking(block, _normal(stated))


def _lacking(block: type[Levers], values: dict[str, object]) -> list[str]:
    always, own = block(), _own(block)
    return [name for name, value in values.items() if name not in own and value != getattr(always, name)]


def _normal(stated: dict[str, object]) -> dict[str, object]:
    unknown = set(stated) - set(UNPULLED)
    if unknown:
        raise TypeError(f"not levers: {', '.join(sorted(unknown))}")
    return {name: tuple(value) if isinstance(value, list) else value for name, value in stated.items()}
