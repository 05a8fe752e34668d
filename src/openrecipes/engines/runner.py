"""The one interface between a recipe and the machine that trains it: an engine's runner renders a recipe into a
launch (its command, environment, nodes, GPUs per node and steps), reads that launch's output live, and names
what `openrecipes run` checks before starting it. `launch/`, `tune/`, `measure/` and `audit/` speak only to this
interface; each engine's runner lives in its own folder (engines/<name>/runner.py) and its `Engine` holds it.

A recipe reaches a runner as its typed `catalog.model.Recipe`, with its model card and its `run` command parsed
once (`catalog.command.ParsedRun`); the catalog sits on a floor above this one, so they are typed here by what a
runner reads of them (`Any` for the recipe, whose fields a runner reads through its engine's flag table).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from openrecipes.engines.levers import Levers
from openrecipes.steptable import Step


class LaunchCommand(Protocol):
    """A recipe's parsed `run` command (catalog.command.ParsedRun): the launch line's words, arrays expanded."""

    argv: list[str]

    def has(self, flag: str) -> bool: ...

    def value(self, flag: str) -> str | None: ...


class ModelCard(Protocol):
    """What a runner reads of a model card (catalog.hardware.ModelCard): its name and architecture keys."""

    @property
    def name(self) -> str: ...

    @property
    def architecture(self) -> Mapping[str, Any]: ...


class StepReader(Protocol):
    """A run's output fed one line at a time as it arrives; each line parsed once."""

    def feed(self, line: str, where: str) -> Step | None: ...


@dataclass(frozen=True)
class NodeCommand:
    """What every node of a batch job runs: torchrun with these options starting `module` with `args` (the node
    count, process count and rendezvous are added by the scheduler's script); `gpus` asks for nproc_per_node GPUs
    on each node."""

    nnodes: int
    nproc_per_node: int
    env: Mapping[str, str]
    torchrun_options: Mapping[str, Sequence[str]]
    module: str
    args: Sequence[str]
    gpus: bool = True


class Launch(Protocol):
    """A recipe rendered for its engine: what `openrecipes run` prints (--dry-run) or starts, and what each node of
    a batch job runs."""

    @property
    def env(self) -> Mapping[str, str]: ...

    @property
    def nnodes(self) -> int: ...

    @property
    def nproc_per_node(self) -> int: ...

    @property
    def steps(self) -> int: ...

    def argv(self) -> list[str]:
        """The one-node command this machine starts."""
        ...

    def script(self) -> str:
        """The run as a recipe's `run` text (exports, then the command), as command.sh keeps it."""
        ...

    def dry_run(self) -> str:
        """What `openrecipes run --dry-run` prints: the exact command and its resolved configuration."""
        ...

    def node_command(self) -> NodeCommand:
        """What each node of a batch job runs (a UserError where the engine's runs are not started per node)."""
        ...

    def reader(self) -> StepReader:
        """A fresh reader of this launch's output."""
        ...

    def with_env(self, extra: Mapping[str, str]) -> Launch:
        """The same launch with `extra` exported too (a tune lane's GPUs; nothing the run computes)."""
        ...


class Runner(Protocol):
    """An engine's runner: a recipe (catalog.model.Recipe) in, a launch or a `run` text out."""

    @property
    def runs_here(self) -> bool:
        """`openrecipes run` starts its launches on this machine, `tune` measures them and `record` reads a run's
        layout back from its command; where False, its launches are printed (--dry-run) and run elsewhere."""
        ...

    @property
    def package(self) -> str | None:
        """The Python package its runs train with: preflight imports it, a stack line names it."""
        ...

    @property
    def dataset_flag(self) -> str | None:
        """The command's flag naming the rows file preflight checks."""
        ...

    def launch(self, recipe: Any, card: ModelCard, command: LaunchCommand, steps: int | None = None) -> Launch:
        """What `openrecipes run` starts (or prints) for the recipe, `steps` replacing its own."""
        ...

    def reference_run(self, recipe: Any, card: ModelCard, command: LaunchCommand, steps: int) -> str:
        """The recipe's own configuration at `steps` steps, as `run` text (tune's reference arm)."""
        ...

    def levers_of(self, recipe: Any, command: LaunchCommand) -> Levers:
        """The recipe's lever block (engines/<name>/levers.py): from its layout's fields and, for a lever no field
        carries, its run command (`command`)."""
        ...

    def planned_run(self, recipe: Any, card: ModelCard, base: Any, base_command: LaunchCommand, levers: Levers,
                    rows_path: str | None = None) -> str:
        """`run` text for a recipe whose layout fields differ from `base`'s (its `run` parsed: `base_command`): its
        fields' flags over the base command's other words, the levers no field carries as `levers` pulls them, and
        `rows_path` (where given) for the base's rows file (a tuned or planned layout)."""
        ...
