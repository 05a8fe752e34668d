"""Work spread over the machine's cores: a list of independent items handed in contiguous shares to forked
processes, the results back in the items' order.

Forked processes start as copies of this one (the catalog, the templates and the page records already in memory),
so only each item's index goes out and only its result comes back. Below `minimum` items, or on one core, the work
stays in this process: a fork costs more than a small catalog's whole job.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")
_WORK: tuple[Callable[[Any], Any], Sequence[Any]] | None = None  # what the forked processes inherit
SHARES_PER_CORE = 4  # smaller shares even out a share that takes longer than the others


def cores() -> int:
    return len(os.sched_getaffinity(0))


def forked_map(function: Callable[[Item], Result], items: Sequence[Item], minimum: int) -> list[Result]:
    """[function(item) for item in items], over every core once there are `minimum` items."""
    workers = min(cores(), len(items))
    if workers < 2 or len(items) < minimum:
        return [function(item) for item in items]
    global _WORK
    _WORK = (function, items)
    size = -(-len(items) // (workers * SHARES_PER_CORE))
    try:
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            shares = pool.map(_share, [(start, min(start + size, len(items))) for start in range(0, len(items), size)])
    finally:
        _WORK = None
    return [result for share in shares for result in share]


def _share(span: tuple[int, int]) -> list[Any]:
    assert _WORK is not None, "forked_map sets the work before it forks"
    function, items = _WORK
    return [function(items[index]) for index in range(*span)]
