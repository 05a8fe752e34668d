"""The stack line our entry modules print on rank 0 before training, read back from their logs.

`openrecipes stack: torch=2.11.0+cu130 cuda=13.0 nccl=2.28.9 torchtitan=0.2.2 python=3.12.3 gpu=NVIDIA H200`:
the versions a recipe's `stack:` states, as the measured run itself reported them (the engine's package under
its own name).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

STACK_PREFIX = "openrecipes stack:"
_STACK = re.compile(re.escape(STACK_PREFIX) + r"(.*)$")
# A value runs up to the next ` name=` (the GPU name holds spaces: gpu=NVIDIA H200).
_PAIR = re.compile(r"(\w+)=(.*?)(?=\s+\w+=|\s*$)")


@dataclass(frozen=True)
class StackLine:
    versions: Mapping[str, str]  # every name=value the line printed: torch, cuda, nccl, python, the engine's package

    def get(self, name: str) -> str | None:
        return self.versions.get(name)

    @property
    def gpu(self) -> str | None:
        """The device name CUDA reports, e.g. NVIDIA H200."""
        return self.versions.get("gpu")


def read_stack_line(lines: list[str]) -> StackLine | None:
    """The first stack line of a log's lines, or None when the run printed none."""
    for line in lines:
        if match := _STACK.search(line):
            return StackLine(dict(_PAIR.findall(match.group(1).strip())))
    return None
