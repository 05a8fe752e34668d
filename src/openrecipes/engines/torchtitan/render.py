"""A recipe as a torchtitan 0.2.2 launch: the torchrun command, its flags and its env.

The layout and workload fields decide the flags that place the model (parallel degrees, microbatch, recompute,
compile, batch shape, steps); the model card names torchtitan's model and flavor (architecture.torchtitan_model,
architecture.torchtitan_flavor). Everything else (optimizer, LR schedule, data path, seed, logging) is read from
the recipe's own `run` command, so the recipe stays the one place a run is written down. torchtitan keeps the
global batch with gradient accumulation: global_batch / (local_batch * data-parallel degree) microbatches a step.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from openrecipes.catalog.command import parse_run
from openrecipes.catalog.hardware import ModelCard
from openrecipes.catalog.model import Recipe
from openrecipes.errors import UserError

ENTRY_MODULE = "openrecipes.engines.torchtitan.train"
AC_MODES = {None: "none", "full": "full", "selective": "selective"}


@dataclass(frozen=True)
class TorchtitanLaunch:
    env: dict[str, str]
    nnodes: int
    nproc_per_node: int
    flags: dict[str, list[str]]  # --section.option -> its values; [] for a switch

    def torchtitan_argv(self) -> list[str]:
        return [word for flag, values in self.flags.items() for word in (flag, *values)]

    def argv(self, rendezvous: list[str] | None = None) -> list[str]:
        """The torchrun command; `rendezvous` (c10d flags) replaces nothing and goes before the module."""
        return ["torchrun", "--nnodes", str(self.nnodes), "--nproc_per_node", str(self.nproc_per_node),
                *(rendezvous or []), "-m", ENTRY_MODULE, *self.torchtitan_argv()]

    def script(self) -> str:
        """The run as a recipe's `run` text: one export line, then one flag (and its value) per line."""
        exports = " ".join(f"{name}={shlex.quote(value)}" for name, value in self.env.items())
        head = shlex.join(self.argv()[: 7])  # torchrun --nnodes N --nproc_per_node G -m module
        rest = [shlex.join([flag, *values]) for flag, values in self.flags.items()]
        lines = ([f"export {exports}"] if exports else []) + [" \\\n  ".join([head, *rest])]
        return "\n".join(lines) + "\n"


def is_torchtitan(recipe: Recipe) -> bool:
    parsed = parse_run(recipe.run)
    return bool(parsed.launcher) and parsed.launcher[0] == "torchrun" and ENTRY_MODULE in parsed.launcher


def layout_flags(recipe: Recipe, card: ModelCard) -> dict[str, list[str]]:
    """The flags the recipe's fields decide, in the order a reader looks for them."""
    layout, workload = recipe.layout, recipe.workload
    try:
        model, flavor = card.architecture["torchtitan_model"], card.architecture["torchtitan_flavor"]
    except KeyError:
        raise UserError(f"model card '{card.name}' names no torchtitan model: add architecture.torchtitan_model "
                        "and architecture.torchtitan_flavor (e.g. qwen3, 8B)") from None
    if workload.precision != "bf16":
        raise UserError(f"precision {workload.precision}: the torchtitan engine runs BF16 mixed precision only")
    fsdp = layout.fsdp or layout.dp
    if layout.dp % fsdp:
        raise UserError(f"layout.dp {layout.dp} is not a multiple of layout.fsdp {fsdp}")
    recompute = layout.recompute
    flags: dict[str, list[str]] = {
        "--model.name": [str(model)],
        "--model.flavor": [str(flavor)],
        "--training.seq_len": [str(workload.row_tokens)],
        "--training.global_batch_size": [str(workload.global_batch)],
        "--training.local_batch_size": [str(layout.rows_per_microbatch)],
        "--training.steps": [str(recipe.result.steps_per_run)],
        "--parallelism.data_parallel_shard_degree": [str(fsdp)],
        "--parallelism.data_parallel_replicate_degree": [str(layout.dp // fsdp)],
        "--parallelism.tensor_parallel_degree": [str(layout.tp)],
        "--parallelism.pipeline_parallel_degree": [str(layout.pp)],
        "--parallelism.context_parallel_degree": [str(layout.cp)],
        "--parallelism.expert_parallel_degree": [str(layout.ep)],
        "--parallelism.expert_tensor_parallel_degree": [str(layout.etp)],
        "--activation_checkpoint.mode": [AC_MODES[recompute.granularity if recompute else None]],
    }
    if recompute and recompute.granularity == "selective" and recompute.method:
        flags["--activation_checkpoint.selective_ac_option"] = [recompute.method]
    if layout.compile:
        flags["--compile.enable"] = []
    return flags


def render(recipe: Recipe, card: ModelCard, *, steps: int | None = None,
           overrides: dict[str, list[str]] | None = None) -> TorchtitanLaunch:
    """The launch of `recipe`: its fields' flags over the options its `run` command sets, then `overrides`."""
    parsed = parse_run(recipe.run)
    from_fields = layout_flags(recipe, card)
    flags: dict[str, list[str]] = {}
    for flag, values in parsed.flags.items():
        if flag in ("--nnodes", "--nproc_per_node"):
            continue
        if flag in from_fields and from_fields[flag] != values:
            raise UserError(f"the run command sets {shlex.join([flag, *values])} but the recipe's fields say "
                            f"{shlex.join([flag, *from_fields[flag]])}; run `openrecipes validate` on the recipe")
        flags[flag] = values
    flags = {**from_fields, **{f: v for f, v in flags.items() if f not in from_fields}}
    if steps is not None:
        flags["--training.steps"] = [str(steps)]
    flags.update(overrides or {})
    nodes = recipe.gpu.count // recipe.gpu.per_node
    return TorchtitanLaunch(env=dict(recipe.env), nnodes=nodes, nproc_per_node=recipe.gpu.per_node, flags=flags)
