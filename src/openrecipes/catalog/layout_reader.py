"""A recipe's layout read back from a run command: what `openrecipes record` writes for a run whose layout no
recipe of the catalog has yet. Every field that a launch flag carries is read through the engine's own flag table
(the one the validator compares both ways), so a recorded recipe validates by construction; the fields no flag
carries follow from them by the layout arithmetic the validator checks."""

from __future__ import annotations

from typing import Any

from openrecipes.catalog.command import ParsedRun
from openrecipes.catalog.hardware import ModelCard
from openrecipes.catalog.model import Float8, Gpu, Layout, Recipe, Recompute, Workload
from openrecipes.engines.knowledge import FlagField
from openrecipes.engines.registry import engine_named
from openrecipes.errors import UserError
from openrecipes.names import layout_label

GRANULARITY = "layout.recompute.granularity"  # read with the method the command gives it (the recompute block)


def with_command_layout(base: Recipe, command: ParsedRun, where: str, card: ModelCard) -> Recipe:
    """`base` with its layout, GPU count and batch shape read from `command` (a run of `base`'s engine, where that
    engine's runs start here), and, when the layout changed, words that say what it is; not yet revalidated.
    Another engine's run keeps `base`'s layout."""
    engine = engine_named(base.engine)
    if not engine.runner.runs_here:
        return base  # a Megatron/slime run's layout stays its --like recipe's (the validator compares the two)
    trains = tuple(command.value(flag) for flag in engine.model_flags)
    expected = tuple(card.architecture.get(key) for key in engine.model_flags.values())
    if trains != expected:
        raise UserError(f"{where}: the run trains {engine.name}'s {' '.join(map(str, trains))} but the --like recipe "
                        f"is {base.model} ({' '.join(map(str, expected))}); give a --like recipe of the run's model")
    data: dict[str, Any] = base.model_dump()
    for row in engine.flags:
        section, *path = row.field.split(".")
        read_with_parent = row.field.startswith(("layout.float8.", "layout.recompute.")) and row.field != GRANULARITY
        if section not in ("layout", "gpu", "workload") or read_with_parent:
            continue
        value = row.read(command)
        if row.field == GRANULARITY:
            data["layout"]["recompute"] = _recompute(base, command, str(value), engine.flags)
        elif row.field == "layout.float8":
            data["layout"]["float8"] = _float8(command, engine.flags) if value is not None else None
        elif row.kind == "list":
            data[section][path[0]] = str(value).split(",") if value else []
        else:
            data[section][path[0]] = value
    lay, gpu = data["layout"], data["gpu"]
    nodes = int(command.value(engine.node_flags[0]) or 1)
    gpu["count"] = nodes * gpu["per_node"]
    model_parallel = lay["tp"] * lay["pp"] * lay["cp"]
    if gpu["count"] % model_parallel:
        raise UserError(f"{where}: TP x PP x CP = {model_parallel} does not divide {gpu['count']} GPUs")
    lay.update(dp=gpu["count"] // model_parallel, vpp=1, layer_split=None, offload=None,
               sequence_parallel=lay["tp"] > 1,
               max_tokens_per_gpu=lay["rows_per_microbatch"] * data["workload"]["row_tokens"] // lay["cp"])
    if _placement(lay) != _placement(base.layout.model_dump()):
        label = layout_label(lay["tp"], lay["pp"], lay["dp"], lay["vpp"], lay["cp"], lay["ep"], lay["etp"])
        granularity = lay["recompute"]["granularity"] if lay["recompute"] else "none"
        settings = (f"{lay['rows_per_microbatch']} row(s) of {data['workload']['row_tokens']:,} tokens a microbatch; "
                    f"recompute {granularity}; {'torch.compile' if lay['compile'] else 'eager'}")
        lay.update(label=label, highlights=f"recorded: {label}; {settings}",
                   summary=f"{label}; {settings} (read from the run's command by `openrecipes record`)")
    if lay["float8"] is not None:
        data["workload"]["precision"] = "fp8"
    return base.model_copy(update={"layout": Layout.model_validate(lay), "gpu": Gpu.model_validate(gpu),
                                   "workload": Workload.model_validate(data["workload"])})


def _placement(lay: dict[str, Any]) -> dict[str, Any]:
    """The fields that decide where the model and its work go: everything but the words."""
    return {k: v for k, v in lay.items() if k not in ("label", "summary", "highlights")}


def _recompute(base: Recipe, command: ParsedRun, granularity: str,
               rows: tuple[FlagField, ...]) -> dict[str, Any] | None:
    if granularity == "none":
        return None
    if base.layout.recompute is not None and base.layout.recompute.granularity == granularity:
        return base.layout.recompute.model_dump()
    method = next(row.read(command) for row in rows if row.field == "layout.recompute.method") \
        if granularity == "selective" else None
    return Recompute.model_validate({"granularity": granularity, "method": method}).model_dump()


def _float8(command: ParsedRun, rows: tuple[FlagField, ...]) -> dict[str, Any]:
    values = {row.field.rsplit(".", 1)[1]: row.read(command) for row in rows
              if row.field.startswith("layout.float8.")}
    skip = values.pop("skip")
    return Float8.model_validate({**values, "skip": str(skip).split(",") if skip else []}).model_dump()
