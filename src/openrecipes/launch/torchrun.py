"""torchrun's words, as the one-node launch (launch/torchtitan/render.py) and every node of a Slurm job
(launch/slurm.py) write them: the node and process counts first, then torchrun's other options."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from openrecipes.engines.torchtitan.flags import NODE_FLAGS


def option_words(options: Mapping[str, Sequence[str]]) -> list[str]:
    """{"--flag": ["v1", "v2"], "--switch": []} -> ["--flag", "v1", "v2", "--switch"]."""
    return [word for flag, values in options.items() for word in (flag, *values)]


def torchrun_words(nnodes: int, nproc_per_node: int, options: Mapping[str, Sequence[str]]) -> list[str]:
    """torchrun's options: `--nnodes N --nproc_per_node P`, then `options`."""
    counts = dict(zip(NODE_FLAGS, ([str(nnodes)], [str(nproc_per_node)]), strict=True))
    return option_words({**counts, **options})
