"""The stack line torchtitan runs print on rank 0 before training, read back from their logs.

`openrecipes stack: torch=2.11.0+cu130 cuda=13.0 nccl=2.28.9 torchtitan=0.2.2 python=3.12.3 gpu=NVIDIA H200`:
the versions a recipe's `stack:` states, as the measured run itself reported them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

STACK_PREFIX = "openrecipes stack:"
_STACK = re.compile(re.escape(STACK_PREFIX) + r"(.*)$")
# A value runs up to the next ` name=` (the GPU name holds spaces: gpu=NVIDIA H200).
_PAIR = re.compile(r"(\w+)=(.*?)(?=\s+\w+=|\s*$)")


@dataclass(frozen=True)
class StackLine:
    torch: str | None = None
    cuda: str | None = None
    nccl: str | None = None
    torchtitan: str | None = None
    python: str | None = None
    gpu: str | None = None  # the device name CUDA reports, e.g. NVIDIA H200


def read_stack_line(lines: list[str]) -> StackLine | None:
    """The first stack line of a log's lines, or None when the run printed none."""
    for line in lines:
        if match := _STACK.search(line):
            pairs = dict(_PAIR.findall(match.group(1).strip()))
            return StackLine(**{name: pairs.get(name) for name in StackLine.__dataclass_fields__})
    return None
