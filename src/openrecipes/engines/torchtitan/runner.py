"""torchtitan's runner: a recipe as a torchtitan 0.2.2 launch (the torchrun command, its flags and its env), read
live by its log reader; the one-node run starts here and a Slurm job runs it on every node.

The layout and workload fields decide the flags that place the model (parallel degrees, microbatch, recompute,
compile, batch shape, steps); the model card names torchtitan's model and flavor (architecture.torchtitan_model,
architecture.torchtitan_flavor). Everything else (optimizer, LR schedule, data path, seed, logging) is read from
the recipe's own `run` command, so the recipe stays the one place a run is written down. torchtitan keeps the
global batch with gradient accumulation: global_batch / (local_batch * data-parallel degree) microbatches a step.
"""

from __future__ import annotations

import dataclasses
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from openrecipes.engines.levers import Levers, levers_of
from openrecipes.engines.runner import LaunchCommand, ModelCard, NodeCommand
from openrecipes.engines.torchrun import option_words, torchrun_words
from openrecipes.engines.torchtitan.command import ENTRY_MODULE, PACKAGE, entry_at, is_recipe
from openrecipes.engines.torchtitan.flags import FLAGS, MODEL_FLAGS, NO_RESHARD, NODE_FLAGS, REPLICATE_FLAG
from openrecipes.engines.torchtitan.levers import TorchtitanLevers
from openrecipes.engines.torchtitan.logs import TorchtitanReader
from openrecipes.errors import UserError
from openrecipes.jsonout import json_text

Recipe = Any  # a catalog.model.Recipe (the catalog sits on a floor above the engines)

# The launch writes the engine's flag table (engines/torchtitan/flags.py) in its order, torchrun's node counts
# aside: the layout's flags first, the levers beyond the layout (from the first lever row on) last in a run.
_LEVER_FIELDS = ("layout.kernels", "layout.attention", "layout.float8")
_TRAINER_ROWS = tuple(row for row in FLAGS if row.flag not in NODE_FLAGS)
_FIRST_LEVER = next(at for at, row in enumerate(_TRAINER_ROWS) if row.field in _LEVER_FIELDS)
LEVER_FLAGS = tuple(row.flag for row in _TRAINER_ROWS[_FIRST_LEVER:])
STEPS_FLAG = next(row.flag for row in FLAGS if row.field == "result.steps_per_run")
_SHARD_FIELD = "layout.fsdp"  # written as DP where null (one shard group), its replicas after it
# Flags whose presence the layout fields decide (layout_flags writes them or leaves them out).
FIELD_OWNED = tuple(row.flag for row in _TRAINER_ROWS)
# Logging choices of every run we start: rank 0's lines only, prefixed `[rank0]:`, without colour codes, so the
# raw log is what `openrecipes measure` reads. They change nothing the model computes.
LOG_TORCHRUN_OPTIONS = {"--local-ranks-filter": ["0"], "--role": ["rank"], "--tee": ["3"]}
LOG_FLAGS = {"--metrics.log_freq": ["1"], "--metrics.disable_color_printing": []}
DATASET_FLAG = "--training.dataset_path"  # the rows file preflight checks


@dataclass(frozen=True)
class TorchtitanLaunch:
    env: dict[str, str]
    nnodes: int
    nproc_per_node: int
    torchrun_options: dict[str, list[str]]  # torchrun's own options besides the node and process counts
    flags: dict[str, list[str]]  # torchtitan's --section.option -> its values; [] for a switch

    @property
    def steps(self) -> int:
        """The optimizer steps the run takes: its --training.steps (every recipe's command sets it)."""
        return int(self.flags[STEPS_FLAG][0])

    def torchtitan_argv(self) -> list[str]:
        return option_words(self.flags)

    def argv(self) -> list[str]:
        """The one-node torchrun command (`openrecipes launch --slurm` writes the multi-node one)."""
        return ["torchrun", *torchrun_words(self.nnodes, self.nproc_per_node, self.torchrun_options), "-m",
                ENTRY_MODULE, *self.torchtitan_argv()]

    def script(self) -> str:
        """The run as a recipe's `run` text: one export line, then torchrun and one flag per line."""
        exports = " ".join(f"{name}={shlex.quote(value)}" for name, value in self.env.items())
        argv = self.argv()
        head = shlex.join(argv[: argv.index(ENTRY_MODULE) + 1])
        rest = [shlex.join([flag, *values]) for flag, values in self.flags.items()]
        lines = ([f"export {exports}"] if exports else []) + [" \\\n  ".join([head, *rest])]
        return "\n".join(lines) + "\n"

    def dry_run(self) -> str:
        """The script, then its environment, node counts and torchtitan flags as JSON."""
        config = {"env": self.env, "nnodes": self.nnodes, "nproc_per_node": self.nproc_per_node,
                  "torchtitan": {flag: values for flag, values in self.flags.items()}}
        return self.script() + json_text(config, indent=2) + "\n"

    def node_command(self) -> NodeCommand:
        return NodeCommand(self.nnodes, self.nproc_per_node, self.env, self.torchrun_options, ENTRY_MODULE,
                           self.torchtitan_argv())

    def reader(self) -> TorchtitanReader:
        return TorchtitanReader()

    def with_env(self, extra: Mapping[str, str]) -> TorchtitanLaunch:
        return dataclasses.replace(self, env={**self.env, **extra})


def _options(words: list[str]) -> dict[str, list[str]]:
    """`--flag v1 v2 --switch` -> {"--flag": ["v1", "v2"], "--switch": []}."""
    options: dict[str, list[str]] = {}
    current = None
    for word in words:
        if word.startswith("--"):
            flag, sep, inline = word.partition("=")
            current = flag
            options[flag] = [inline] if sep else []
        elif current is not None:
            options[current].append(word)
    return options


def split_command(command: LaunchCommand) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """(torchrun's options, torchtitan's flags) of a recipe's parsed `run` command."""
    if not is_recipe(command):
        raise UserError(f"the run command does not start {ENTRY_MODULE}; it is not a torchtitan recipe")
    argv = list(command.argv)
    at = entry_at(argv)
    assert at is not None  # is_recipe found it
    return _options(argv[1: at - 1]), _options(argv[at + 1:])


def layout_flags(recipe: Recipe, card: ModelCard) -> dict[str, list[str]]:
    """The flags the recipe's fields decide, in the order a reader looks for them."""
    layout, workload = recipe.layout, recipe.workload
    if not set(card.architecture) >= set(MODEL_FLAGS.values()):
        raise UserError(f"model card '{card.name}' names no torchtitan model: add architecture.torchtitan_model "
                        "and architecture.torchtitan_flavor (e.g. qwen3, 8B)")
    if workload.precision not in ("bf16", "fp8"):
        raise UserError(f"precision {workload.precision}: the torchtitan engine runs BF16 mixed precision, or FP8 "
                        "linear layers with layout.float8")
    if (workload.precision == "fp8") != (layout.float8 is not None):
        raise UserError(f"workload.precision is {workload.precision} but layout.float8 is "
                        f"{'null' if layout.float8 is None else 'set'}: FP8 training needs layout.float8 and BF16 "
                        "none; run `openrecipes validate` on the recipe")
    fsdp = layout.fsdp or layout.dp
    if layout.dp % fsdp:
        raise UserError(f"layout.dp {layout.dp} is not a multiple of layout.fsdp {fsdp}")
    flags: dict[str, list[str]] = {flag: [str(card.architecture[key])] for flag, key in MODEL_FLAGS.items()}
    for row in _TRAINER_ROWS:
        words = [str(fsdp)] if row.field == _SHARD_FIELD else row.words(recipe)
        if words is not None:
            flags[row.flag] = words
        if row.field == _SHARD_FIELD:
            flags[REPLICATE_FLAG] = [str(layout.dp // fsdp)]
    return flags


def compose(recipe: Recipe, card: ModelCard, command: LaunchCommand) -> TorchtitanLaunch:
    """`recipe`'s field flags over the other options of a parsed run `command` (the recipe's own, or the base's a
    tuned layout starts from). Flags the fields decide are never taken from the command."""
    torchrun_options, written = split_command(command)
    from_fields = layout_flags(recipe, card)
    kept = {flag: values for flag, values in written.items() if flag not in from_fields and flag not in FIELD_OWNED}
    placed = {flag: values for flag, values in from_fields.items() if flag not in LEVER_FLAGS}
    levers = {flag: values for flag, values in from_fields.items() if flag in LEVER_FLAGS}
    for counted in NODE_FLAGS:
        torchrun_options.pop(counted, None)
    return TorchtitanLaunch(env=dict(recipe.env), nnodes=recipe.gpu.count // recipe.gpu.per_node,
                            nproc_per_node=recipe.gpu.per_node, torchrun_options=torchrun_options,
                            flags={**placed, **kept, **levers})


def render(recipe: Recipe, card: ModelCard, command: LaunchCommand, *, steps: int | None = None,
           overrides: dict[str, list[str]] | None = None) -> TorchtitanLaunch:
    """The launch of `recipe`: its fields' flags over the options its parsed `run` command sets, then `overrides`."""
    written = split_command(command)[1]
    from_fields = layout_flags(recipe, card)
    for flag, values in written.items():
        if (flag in from_fields and from_fields[flag] != values) or (flag in FIELD_OWNED and flag not in from_fields):
            said = shlex.join([flag, *from_fields[flag]]) if flag in from_fields else f"no {flag}"
            raise UserError(f"the run command sets {shlex.join([flag, *values])} but the recipe's fields say "
                            f"{said}; run `openrecipes validate` on the recipe")
    launch = compose(recipe, card, command)
    if steps is not None:
        launch.flags[STEPS_FLAG] = [str(steps)]
    launch.flags.update(overrides or {})
    return launch


def run_launch(recipe: Recipe, card: ModelCard, command: LaunchCommand, steps: int | None = None) -> TorchtitanLaunch:
    """What `openrecipes run` starts: the recipe's launch with the logging choices of every run we start."""
    launch = render(recipe, card, command, steps=steps, overrides=LOG_FLAGS)
    return dataclasses.replace(launch, torchrun_options={**launch.torchrun_options, **LOG_TORCHRUN_OPTIONS})


def planned_run(recipe: Recipe, card: ModelCard, base_command: LaunchCommand, levers: Levers,
                rows_path: str | None) -> str:
    """`run` for a recipe whose fields differ from the base: its fields' flags over the base command's others (and
    `rows_path` for the base's rows file, where given)."""
    from_base = compose(recipe, card, base_command)
    if rows_path is not None:
        from_base.flags[DATASET_FLAG] = [rows_path]
    flag, value = NO_RESHARD
    from_base.flags.pop(flag, None)  # the base's choice; the plan's own follows, before the levers (which end a run)
    lever_flags = {lever: from_base.flags.pop(lever) for lever in LEVER_FLAGS if lever in from_base.flags}
    if not levers.reshard_after_forward:
        from_base.flags[flag] = [value]
    from_base.flags.update(lever_flags)
    return from_base.script()


@dataclass(frozen=True)
class TorchtitanRunner:
    runs_here: bool = True
    package: str | None = PACKAGE
    dataset_flag: str | None = DATASET_FLAG

    def launch(self, recipe: Recipe, card: ModelCard, command: LaunchCommand,
               steps: int | None = None) -> TorchtitanLaunch:
        return run_launch(recipe, card, command, steps)

    def reference_run(self, recipe: Recipe, card: ModelCard, command: LaunchCommand, steps: int) -> str:
        return render(recipe, card, command, steps=steps).script()

    def levers_of(self, recipe: Recipe, command: LaunchCommand) -> Levers:
        return levers_of(TorchtitanLevers, recipe.engine, **recipe.layout.stated_levers(),
                         reshard_after_forward=command.value(NO_RESHARD[0]) != NO_RESHARD[1])

    def planned_run(self, recipe: Recipe, card: ModelCard, base: Recipe, base_command: LaunchCommand, levers: Levers,
                    rows_path: str | None = None) -> str:
        return planned_run(recipe, card, base_command, levers, rows_path)


RUNNER = TorchtitanRunner()
