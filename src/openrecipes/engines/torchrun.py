"""torchrun's words, as a one-node launch (engines/torchtitan/runner.py) and every node of a Slurm job
(launch/slurm.py) write them: the node and process counts first, then torchrun's other options."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

NODE_FLAGS = ("--nnodes", "--nproc_per_node")  # torchrun's nodes and processes per node


def option_words(options: Mapping[str, Sequence[str]]) -> list[str]:
    """{"--flag": ["v1", "v2"], "--switch": []} -> ["--flag", "v1", "v2", "--switch"]."""
    return [word for flag, values in options.items() for word in (flag, *values)]


def torchrun_words(nnodes: int, nproc_per_node: int, options: Mapping[str, Sequence[str]]) -> list[str]:
    """torchrun's options: `--nnodes N --nproc_per_node P`, then `options`."""
    counts = dict(zip(NODE_FLAGS, ([str(nnodes)], [str(nproc_per_node)]), strict=True))
    return option_words({**counts, **options})
