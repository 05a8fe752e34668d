"""torchtitan's knowledge as the rest of OpenRecipes asks it: its recipes, flags, log format, layout rules and
runner."""

from __future__ import annotations

from openrecipes.engines.knowledge import Engine
from openrecipes.engines.torchtitan import flags, layouts, logs
from openrecipes.engines.torchtitan.command import ENTRY_MODULE, FORMER_ENTRY_MODULE, is_recipe
from openrecipes.engines.torchtitan.levers import TorchtitanLevers
from openrecipes.engines.torchtitan.runner import RUNNER

ENGINE = Engine(name="torchtitan", is_recipe=is_recipe, flags=flags.FLAGS, flags_when_present=flags.FLAGS_WHEN_PRESENT,
                node_flags=flags.NODE_FLAGS, log_formats=(logs.FORMAT,), layout=layouts.RULES, runner=RUNNER,
                lever_block=TorchtitanLevers, model_flags=flags.MODEL_FLAGS, layers_flag=None,
                published_as=("torchtitan",),
                renamed={FORMER_ENTRY_MODULE: ENTRY_MODULE},
                # our entry module builds the model with its own init_weights and loads no checkpoint
                from_random_weights=lambda run: f"-m {ENTRY_MODULE}" in run)
