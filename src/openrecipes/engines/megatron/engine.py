"""Megatron-LM's and slime's knowledge as the rest of OpenRecipes asks it: their recipes (the seeds'), flags, log
formats, layout rules and runner."""

from __future__ import annotations

from openrecipes.engines.knowledge import Engine
from openrecipes.engines.megatron import flags, layouts, logs
from openrecipes.engines.megatron.levers import MegatronLevers
from openrecipes.engines.megatron.runner import RUNNER
from openrecipes.engines.runner import LaunchCommand

LAUNCHERS = ("python", "python3", "torchrun")  # how slime's and Megatron-LM's trainers are started
# Flags only their trainers take: slime's node counts, Megatron-LM's tensor-parallel size.
OWN_FLAGS = (*flags.NODE_FLAGS, "--tensor-model-parallel-size")


def is_recipe(run: LaunchCommand) -> bool:
    """A Megatron-LM or slime recipe: python or torchrun starting their own trainer (python3 train_async.py,
    torchrun pretrain_gpt.py, ...), which it passes their own flags, and no module of ours."""
    return (bool(run.argv) and run.argv[0] in LAUNCHERS and any(run.has(flag) for flag in OWN_FLAGS)
            and not any(word.startswith("openrecipes.") for word in run.argv))


ENGINE = Engine(name="megatron", is_recipe=is_recipe, flags=flags.FLAGS, flags_when_present=flags.FLAGS_WHEN_PRESENT,
                node_flags=flags.NODE_FLAGS, log_formats=logs.FORMATS, layout=layouts.RULES, runner=RUNNER,
                lever_block=MegatronLevers, model_flags={}, layers_flag=flags.LAYERS_FLAG,
                published_as=("megatron-bridge", "nemo"))  # NeMo runs Megatron Core
