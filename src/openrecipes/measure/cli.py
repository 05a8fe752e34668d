"""`openrecipes measure LOG... [--recipe R] [--window A B] [--write] [--json]`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from openrecipes.errors import UserError
from openrecipes.jsonout import json_text


def measure_command(
    logs: Annotated[
        list[Path], typer.Argument(help="the run's training logs (Megatron, slime, torchtitan or JSONL)")],
    recipe: Annotated[
        Path | None, typer.Option("--recipe", help="the recipe the run measured (GPUs, batch, price)")] = None,
    window: Annotated[tuple[int, int] | None, typer.Option(
        "--window", min=0, max=10**15,
        help="first and last step scored, numbered from 0, both included (default: the recipe's result.window)",
    )] = None,
    write: Annotated[bool, typer.Option("--write", help="write the figures into the recipe's result: block")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print the result block as JSON")] = False,
) -> None:
    """The result block of a run from its raw logs: tokens/s per GPU, step-time CV, MFU, $/1M tokens, GPU-hours."""
    from openrecipes.measure.logtext import require_log_text
    from openrecipes.measure.result import inputs_from_recipe, measure, read_run
    from openrecipes.measure.write import write_result

    if write and recipe is None:
        raise UserError("--write needs --recipe: the recipe whose result: block is written")
    for log in logs:
        require_log_text(log)
    inputs = inputs_from_recipe(recipe) if recipe else None
    measured = measure(read_run(logs), inputs, window)
    result = measured.as_json()
    if recipe is not None and write:
        result["written"] = write_result(recipe, measured)
    if as_json:
        print(json_text(result))
        return
    table = Table(title=escape(f"result of {', '.join(map(str, logs))}"), show_header=False)
    for name, value in result.items():
        table.add_row(name, "-" if value is None else escape(str(value)))
    console = Console()
    console.print(table)
    if recipe is None:  # the dashes are figures that need the recipe's GPUs, batch and price, not missing data
        console.print("-: needs the recipe (GPU count, batch, row tokens, price); add --recipe RECIPE.yaml",
                      markup=False, highlight=False)


def register(app: typer.Typer) -> None:
    app.command("measure")(measure_command)
