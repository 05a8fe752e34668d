"""slime/Megatron recipes (the seeds'): their command is printed, never run here.

They need the seeds' training image and cluster (slime, Megatron-LM, a converted checkpoint), so `openrecipes run`
only dry-runs them: the exports and the command exactly as the recipe writes them, with the layout read back
from the command's flags.
"""

from __future__ import annotations

from openrecipes.catalog.command import parse_run
from openrecipes.catalog.model import Recipe

LAYOUT_FLAGS = ("--tensor-model-parallel-size", "--pipeline-model-parallel-size", "--context-parallel-size",
                "--expert-model-parallel-size", "--expert-tensor-parallel-size", "--max-tokens-per-gpu",
                "--global-batch-size", "--actor-num-nodes", "--actor-num-gpus-per-node")


def dry_run_text(recipe: Recipe) -> str:
    parsed = parse_run(recipe.run)
    layout = ", ".join(f"{flag} {parsed.value(flag)}" for flag in LAYOUT_FLAGS if parsed.has(flag))
    return (f"# slime/Megatron recipe by {recipe.author.name}: runs on the seeds' training image and cluster, "
            f"not by `openrecipes run`\n# layout from the command: {layout}\n{recipe.run}")
