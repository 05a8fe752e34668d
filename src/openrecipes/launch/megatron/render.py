"""A slime/Megatron recipe's command for other layout fields: the base recipe's script with each flag of the flag
table (engines/megatron/flags.py) rewritten from the recipe's fields, every other word kept.

The command is printed, never run here (dry_run.py), so it is written as text: a flag the recipe's fields drop is
removed, one they add is appended to the launch line, one they change keeps its place with the new value.
"""

from __future__ import annotations

import re

from openrecipes.catalog.model import Recipe
from openrecipes.engines.megatron.flags import FLAGS, FLAGS_WHEN_PRESENT, GRAD_REDUCE_BF16, NODE_FLAGS

# slime's SFT runs of the seeds read one rollout of global-batch rows per optimizer step: where the base gives
# both the same value, the rollout follows the global batch.
ROLLOUT_BATCH = "--rollout-batch-size"
GLOBAL_BATCH = "--global-batch-size"


def megatron_run(recipe: Recipe, base_run: str, grad_reduce_bf16: bool) -> str:
    """`base_run` with the recipe's layout, batch, steps and nodes in the flag table's flags, and Megatron's 2-byte
    gradient reduction on or off as the plan predicted it."""
    run = base_run.rstrip("\n")
    present = {row.flag for row in FLAGS_WHEN_PRESENT if _find(run, row.flag, True)}
    rollout, batch = _find(run, ROLLOUT_BATCH, True), _find(run, GLOBAL_BATCH, True)
    if rollout and batch and rollout.group(1) == batch.group(1):
        run = _set(run, ROLLOUT_BATCH, [str(recipe.workload.global_batch)])
    for row in (*FLAGS, *(row for row in FLAGS_WHEN_PRESENT if row.flag in present)):
        valued = row.kind != "switch"
        if _find(run, row.flag, valued) or row.expected(recipe) != row.default:  # an absent default stays absent
            run = _set(run, row.flag, row.words(recipe), valued)
    nodes, per_node = NODE_FLAGS
    run = _set(run, nodes, [str(-(-recipe.gpu.count // recipe.gpu.per_node))])
    run = _set(run, per_node, [str(min(recipe.gpu.count, recipe.gpu.per_node))])
    run = _set(run, GRAD_REDUCE_BF16, [] if grad_reduce_bf16 else None, valued=False)
    # a line a removed flag left empty but for its continuation
    return re.sub(r"\n[ \t]*\\(?=\n)", "", run) + "\n"


def _pattern(flag: str, valued: bool) -> str:
    # the flag as a word, with its value (one word, not a flag, not a line continuation) where it takes one
    value = r"[ \t]+((?!--|\\)\S+)" if valued else ""
    return rf"(?<=\s){re.escape(flag)}{value}(?=\s|$)"


def _find(run: str, flag: str, valued: bool) -> re.Match[str] | None:
    return re.search(_pattern(flag, valued), run)


def _set(run: str, flag: str, words: list[str] | None, valued: bool = True) -> str:
    """The flag with `words` after it (in its place, else at the end of the launch line); None: removed."""
    if words is None:
        return re.sub(rf"{_pattern(flag, valued)}[ \t]*", "", run)
    written = " ".join([flag, *words])
    if _find(run, flag, valued):
        return re.sub(_pattern(flag, valued), lambda _: written, run, count=1)
    return f"{run} {written}"
