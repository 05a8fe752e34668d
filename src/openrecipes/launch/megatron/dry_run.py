"""slime/Megatron recipes (the seeds'): their command is printed, never run here.

They need the seeds' training image and cluster (slime, Megatron-LM, a converted checkpoint), so `openrecipes run`
only dry-runs them: the exports and the command exactly as the recipe writes them, with the layout read back
from the command's flags.
"""

from __future__ import annotations

from openrecipes.catalog.command import ParsedRun
from openrecipes.catalog.model import Recipe
from openrecipes.engines.megatron.flags import FLAGS, NODE_FLAGS, SHOWN_FIELDS

SHOWN_FLAGS = tuple(row.flag for row in FLAGS if row.field in SHOWN_FIELDS) + NODE_FLAGS


def dry_run_text(recipe: Recipe, parsed: ParsedRun) -> str:
    layout = ", ".join(f"{flag} {parsed.value(flag)}" for flag in SHOWN_FLAGS if parsed.has(flag))
    return (f"# slime/Megatron recipe by {recipe.author.name}: runs on the seeds' training image and cluster, "
            f"not by `openrecipes run`\n# layout from the command: {layout}\n{recipe.run}")
