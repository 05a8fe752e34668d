"""`openrecipes check convergence | config | component optimizer-offload`.

Each check prints its verdict (or JSON with --json) and exits 0 when it passes, 1 when it fails, 2 on bad input.
On a machine with torch only, the component test runs as `python -m openrecipes.verify.components.optimizer_offload`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer
from rich.console import Console

from openrecipes.errors import EXIT_CHECK_FAILED
from openrecipes.jsonout import json_text

check_app = typer.Typer(help="Verify a recipe: convergence, configuration and component checks.", no_args_is_help=True)
component_app = typer.Typer(help="Component tests at a recipe's shape.", no_args_is_help=True)
check_app.add_typer(component_app, name="component")

JsonOption = Annotated[bool, typer.Option("--json", help="print the verdict as JSON")]


def _report(verdict: dict, passed: bool, as_json: bool, headline: str, items: list[str]) -> None:
    if as_json:
        print(json_text(verdict))
    else:
        Console(highlight=False, soft_wrap=True).print("\n".join([headline, *(f"  - {item}" for item in items)]),
                                                      markup=False)
    if not passed:
        raise typer.Exit(EXIT_CHECK_FAILED)


@check_app.command("convergence")
def convergence_command(
    candidate: Annotated[
        Path, typer.Option("--candidate", help="the candidate arm: a training log or a step,loss CSV")],
    reference: Annotated[
        Path, typer.Option("--reference", help="the reference arm: a training log or a step,loss CSV")],
    placement_only: Annotated[bool, typer.Option(
        "--placement-only", help="also require the strict step-for-step verdict of a placement-only change"
    )] = False,
    as_json: JsonOption = False,
) -> None:
    """Megatron-Bridge's validate_convergence (pipeline thresholds); NaN, missing steps and flat curves fail."""
    from openrecipes.verify.convergence import check_convergence, read_curve

    verdict = check_convergence(read_curve(candidate), read_curve(reference))
    strict = verdict["placement_only"]
    passed = verdict["passed"] and (strict["passed"] or not placement_only)
    headline = (f"convergence: {'pass' if verdict['passed'] else 'FAIL'} (correlation {verdict['correlation']}, "
                f"final loss difference {verdict['final_loss_difference']}, {verdict['pointwise_failures']} "
                f"pointwise failures over {verdict['total_points']} points); placement-only step-for-step: "
                f"{'pass' if strict['passed'] else 'fail'}")
    lines = list(verdict["reasons"])
    if placement_only and not strict["passed"]:
        lines.append(f"steps {strict['failing_steps'][:5]} break {strict['tolerance']}")
    _report(verdict, passed, as_json, headline, lines)


@check_app.command("config")
def config_command(
    candidate: Annotated[Path, typer.Option("--candidate", help="the candidate recipe (YAML) or run script")],
    reference: Annotated[Path, typer.Option("--reference", help="the reference recipe (YAML) or run script")],
    rules: Annotated[
        Path | None, typer.Option("--rules", help="argument classes (default: rules/argument-classes.yaml)")] = None,
    as_json: JsonOption = False,
) -> None:
    """Class every argument that differs: placement only passes; a precision change passes as such (the
    convergence check is its bar); numerics or unclassified fail."""
    from openrecipes.verify.config import PASS, PRECISION_CHANGE, RULES_PATH, check_config
    from openrecipes.verify.config import reason as _config_reason

    verdict = check_config(candidate, reference, rules or RULES_PATH)
    label = " (placement only)" if verdict["placement_only"] else ""
    headline = f"configuration: {verdict['result']}{label}; {len(verdict['changes'])} arguments differ"
    lines = [_config_reason(change) or f"{change['argument']}: {_shown(change['reference'])} -> "
             f"{_shown(change['candidate'])} [{change['class']}]" for change in verdict["changes"]]
    _report(verdict, verdict["result"] in (PASS, PRECISION_CHANGE), as_json, headline, lines)


def _shown(value: object) -> str:
    return "(absent)" if value is None else "(set)" if value is True else str(value)


@component_app.command("optimizer-offload")
def optimizer_offload_command(
    shape: Annotated[Literal["small", "glm5-moe-layer"], typer.Option(
        "--shape", help="small (CI) or glm5-moe-layer (one EP-8 rank's shard)")] = "small",
    device: Annotated[Literal["cpu", "cuda"], typer.Option(
        "--device", help="where the accelerator half of the optimizer runs")] = "cpu",
    as_json: JsonOption = False,
) -> None:
    """CPU optimizer offload against on-device Adam and an FP64 reference; the negative controls must fail."""
    from openrecipes.verify.components.optimizer_offload import report_lines, run

    verdict = run(shape, device)
    headline, *lines = report_lines(verdict)
    _report(verdict, verdict["passed"], as_json, "\n".join([headline, *lines]), [])


def register(app: typer.Typer) -> None:
    app.add_typer(check_app, name="check")

