"""`openrecipes answer MODEL --gpu TYPE --gpus N [--precision P] [--tokens 1B] [--json]`: the one answer, in the
terminal (the home page's question form shows the same lines)."""

from __future__ import annotations

import shutil
from typing import Annotated

import typer

from openrecipes.errors import UserError
from openrecipes.jsonout import json_text

PRECISIONS = ("BF16", "FP8", "MXFP8", "NVFP4")
MAX_GPUS = 2**13  # the planner's limit (plan/cli.py)


def register(app: typer.Typer) -> None:
    app.command("answer")(answer_command)


def answer_command(
    model: Annotated[str, typer.Argument(help="model name, as in models/*.yaml (e.g. llama-3.1-8b)")],
    gpu: Annotated[str, typer.Option("--gpu", help="GPU type (H100, H200, B200, ...) or a part of hardware/gpus.yaml "
                                     "(its type is answered for)")],
    gpus: Annotated[int, typer.Option("--gpus", help="GPU count")],
    precision: Annotated[str | None, typer.Option(
        "--precision", help="BF16, FP8, MXFP8 or NVFP4 (default: any measured or published, BF16 predicted)")] = None,
    tokens: Annotated[str, typer.Option("--tokens", help="the token budget the time and cost are for: 1B, 500M, "
                                        "2T")] = "1B",
    as_json: Annotated[bool, typer.Option("--json", help="print the answer as JSON")] = False,
) -> None:
    """Answer "how fast and at what cost does MODEL train on N x GPU": our measured recipes, then published entries,
    then the planner's best layout on every engine that runs it, each priced for the token budget, with how to get
    a runnable recipe; or why nothing is offered. Exit 2 on bad input."""
    from openrecipes.answer.live import live_answer
    from openrecipes.answer.model import Question, parse_tokens
    from openrecipes.answer.text import wrapped
    from openrecipes.catalog.hardware import resolve_gpu
    from openrecipes.catalog.names import gpu_name, model_name
    from openrecipes.catalog.paths import default_catalog_root
    from openrecipes.catalog.store import load_catalog

    if not 1 <= gpus <= MAX_GPUS:
        raise UserError(f"--gpus {gpus}: give 1 to {MAX_GPUS:,} GPUs")
    family = precision.upper() if precision else None
    if family is not None and family not in PRECISIONS:
        raise UserError(f"--precision {precision}: use {', '.join(PRECISIONS)}")
    budget = parse_tokens(tokens)
    catalog = load_catalog(default_catalog_root())
    tables = catalog.tables
    gpu_type = tables.variants[gpu].type if gpu in tables.variants else resolve_gpu(gpu_name(gpu, tables), tables)[0]
    question = Question(model=model_name(model, tables), gpu_type=gpu_type, gpus=gpus, precision=family,
                        tokens=budget)
    found = live_answer(question, catalog)
    if as_json:
        print(json_text(found.model_dump(mode="json")))
        return
    print(wrapped(found, min(shutil.get_terminal_size().columns, 100)))
