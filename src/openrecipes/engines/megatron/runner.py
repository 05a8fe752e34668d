"""slime/Megatron's runner (the seeds' recipes): their launch is printed, never started here.

They need the seeds' training image and cluster (slime, Megatron-LM, a converted checkpoint), so `openrecipes run`
only dry-runs them: the exports and the command exactly as the recipe writes them, with the layout read back from
the command's flags. A planned layout's command is the base recipe's script with each flag of the flag table
(engines/megatron/flags.py) rewritten from the recipe's fields, every other word kept; it is written as text: a
flag the recipe's fields drop is removed, one they add is appended to the launch line, one they change keeps its
place with the new value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NoReturn

from openrecipes.engines.levers import Levers, levers_of
from openrecipes.engines.megatron.flags import (
    FLAGS,
    FLAGS_WHEN_PRESENT,
    GRAD_REDUCE_BF16,
    NODE_FLAGS,
    SHOWN_FIELDS,
)
from openrecipes.engines.megatron.levers import MegatronLevers
from openrecipes.engines.runner import LaunchCommand, ModelCard, NodeCommand, StepReader
from openrecipes.errors import UserError

Recipe = Any  # a catalog.model.Recipe (the catalog sits on a floor above the engines)
SHOWN_FLAGS = tuple(row.flag for row in FLAGS if row.field in SHOWN_FIELDS) + NODE_FLAGS
ELSEWHERE = "a slime/Megatron recipe runs on the seeds' cluster"

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


@dataclass(frozen=True)
class MegatronLaunch:
    """A seed's command as its recipe writes it, with the layout its flags give: shown, never started here."""

    recipe: Recipe
    command: LaunchCommand
    steps: int
    env: Mapping[str, str] = field(default_factory=dict)

    @property
    def nnodes(self) -> int:
        return -(-self.recipe.gpu.count // self.recipe.gpu.per_node)

    @property
    def nproc_per_node(self) -> int:
        return int(self.recipe.gpu.per_node)

    def argv(self) -> list[str]:
        _elsewhere("use --dry-run here")

    def script(self) -> str:
        return str(self.recipe.run)

    def dry_run(self) -> str:
        layout = ", ".join(f"{flag} {self.command.value(flag)}" for flag in SHOWN_FLAGS if self.command.has(flag))
        return (f"# slime/Megatron recipe by {self.recipe.author.name}: runs on the seeds' training image and "
                f"cluster, not by `openrecipes run`\n# layout from the command: {layout}\n{self.recipe.run}\n")

    def node_command(self) -> NodeCommand:
        _elsewhere("`launch --slurm` writes batch scripts for recipes that run here")

    def reader(self) -> StepReader:
        _elsewhere("its log is measured with `openrecipes measure`")

    def with_env(self, extra: Mapping[str, str]) -> MegatronLaunch:
        return MegatronLaunch(self.recipe, self.command, self.steps, {**self.env, **extra})


def _elsewhere(then: str) -> NoReturn:
    raise UserError(f"{ELSEWHERE}; {then}")


@dataclass(frozen=True)
class MegatronRunner:
    runs_here: bool = False
    package: str | None = None
    dataset_flag: str | None = None

    def launch(self, recipe: Recipe, card: ModelCard, command: LaunchCommand,
               steps: int | None = None) -> MegatronLaunch:
        return MegatronLaunch(recipe, command, steps or recipe.result.steps_per_run, dict(recipe.env))

    def reference_run(self, recipe: Recipe, card: ModelCard, command: LaunchCommand, steps: int) -> str:
        _elsewhere("`tune` measures recipes that run here")

    def levers_of(self, recipe: Recipe, command: LaunchCommand) -> Levers:
        # an FP8 recipe's GEMMs run in Transformer Engine's FP8 (its scaling unstated: the planner's plain fp8)
        return levers_of(MegatronLevers, recipe.engine, **recipe.layout.stated_levers(),
                         grad_reduce_bf16=command.has(GRAD_REDUCE_BF16),
                         low_precision="fp8" if recipe.workload.precision == "fp8" else None)

    def planned_run(self, recipe: Recipe, card: ModelCard, base: Recipe, base_command: LaunchCommand, levers: Levers,
                    rows_path: str | None = None) -> str:
        return megatron_run(recipe, base.run, levers.grad_reduce_bf16)


RUNNER = MegatronRunner()
