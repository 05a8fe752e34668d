"""Megatron-LM's and slime's knowledge as the rest of OpenRecipes asks it: their recipes (the seeds'), flags, log
formats and layout rules."""

from __future__ import annotations

from openrecipes.engines.knowledge import Engine, LaunchCommand
from openrecipes.engines.megatron import flags, layouts, logs


def is_recipe(run: LaunchCommand) -> bool:
    """A Megatron-LM or slime recipe: a launch command starting their own scripts (python3 train_async.py,
    torchrun pretrain_gpt.py, ...), not one of our engines' entry modules."""
    return bool(run.argv) and not any(word.startswith("openrecipes.") for word in run.argv)


ENGINE = Engine(name="megatron", is_recipe=is_recipe, flags=flags.FLAGS, flags_when_present=flags.FLAGS_WHEN_PRESENT,
                node_flags=flags.NODE_FLAGS, log_formats=logs.FORMATS, layout=layouts.RULES, runs_here=False,
                levers=False, model_flags={}, layers_flag=flags.LAYERS_FLAG,
                published_as=("megatron-bridge", "nemo"))  # NeMo runs Megatron Core
