"""The "Running a recipe" steps of one board, written with its best recipe's own chat format, rows, paths and
engine; the general page (running.html) shows the same steps with placeholders and links to every board's."""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from openrecipes.catalog.store import RecipeEntry
from openrecipes.engines.registry import engine_named

# Chat formats whose tokenizer `openrecipes tokenizer export` rebuilds offline, by the family name it takes.
EXPORTABLE_TOKENIZERS = {"gpt_oss": "gpt-oss", "qwen3": "qwen3"}
OUR_BUILDER = "openrecipes "


@dataclass(frozen=True)
class RunningSteps:
    entry: RecipeEntry
    tokenizer_command: str | None  # None: the tokenizer is not rebuilt by our tool (see tokenizer_note)
    tokenizer_note: str
    rows_command: str
    runs_here: bool  # a recipe `openrecipes run` starts (a torchtitan one); others print their command only


def running_steps(entry: RecipeEntry) -> RunningSteps:
    recipe = entry.entry
    dataset = recipe.workload.dataset
    build = dataset.build
    family = EXPORTABLE_TOKENIZERS.get(build.loss_mask)
    tokenizer_dir = f"tok/{family}" if family else "TOKENIZER_DIR"
    ours = build.builder.startswith(OUR_BUILDER)
    if ours:
        rows = build.builder  # our own recipes record the exact command that built their rows
    else:
        lines = [["openrecipes", "rows", "build", "--conversations", "CONVERSATIONS.parquet",
                  "--tokenizer", tokenizer_dir],
                 ["--chat-format", build.loss_mask, "--row-tokens", str(build.row_tokens), "--rows", str(build.rows),
                  "--seed", str(build.seed)],
                 ["--out", f"rows/{build.name}", "--name", build.name],
                 ["--source-dataset", dataset.source] + (["--source-revision", dataset.revision] if dataset.revision
                                                         else [])]
        rows = " \\\n  ".join(" ".join(shlex.quote(word) for word in line) for line in lines)
    note = (f"The command writes its own tokenizer folder: {build.tokenizer}." if ours else
            f"The rows use {build.tokenizer}." if family else
            f"The rows use {build.tokenizer}; put that tokenizer's folder (tokenizer.json and its config) at "
            "TOKENIZER_DIR: our tool rebuilds only the gpt-oss and Qwen3 tokenizers offline.")
    return RunningSteps(entry, f"openrecipes tokenizer export {family} --out {tokenizer_dir}"
                        if family and not ours else None,
                        note, rows, engine_named(recipe.engine).runner.runs_here)
