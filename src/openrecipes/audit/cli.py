"""`openrecipes audit`, `openrecipes reproduce`, `openrecipes record`: argument parsing and printing only."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from openrecipes.catalog.paths import default_catalog_root
from openrecipes.errors import EXIT_CHECK_FAILED, UserError
from openrecipes.jsonout import json_text

if TYPE_CHECKING:
    from openrecipes.audit.evidence import AuditReport
    from openrecipes.audit.reproduce import Reproduced
    from openrecipes.catalog.hardware import ReferenceTables

CatalogOption = Annotated[
    Path | None, typer.Option("--catalog", help="folder holding recipes/ and runs/ (default: this checkout's)")
]


def audit_command(
    paths: Annotated[list[Path] | None, typer.Argument(help="recipe files or folders (default: every recipe)")] = None,
    catalog: CatalogOption = None,
    rebuild_rows: Annotated[bool, typer.Option(
        "--rebuild-rows", help="rebuild rows made from the bundled demo corpus and compare their sha256 (slow)"),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print [{path, evidence, ok, findings}]")] = False,
) -> None:
    """Re-derive every published figure from the raw logs under runs/ and check each recipe's verdicts against
    its own figures and thresholds. Exit 0 when all hold, 1 on a finding, 2 on bad input."""
    from openrecipes.audit.review import audit

    reports = audit(catalog or default_catalog_root(), paths, rebuild_rows)
    if as_json:
        print(json_text([r.as_json() for r in reports]))
    else:
        _print_reports(reports)
    if not all(r.ok for r in reports):
        raise typer.Exit(EXIT_CHECK_FAILED)


def _print_reports(reports: list[AuditReport]) -> None:
    console = Console(highlight=False, soft_wrap=True)
    # Grouped by board folder, then by evidence, each recipe by its file name alone: the longest line fits 80 columns
    # and no name is cut (three GLM recipes share a long prefix; only their names tell them apart).
    folder = evidence = None
    for report in reports:
        if report.path.parent != folder:
            folder, evidence = report.path.parent, None
            console.print(f"{folder}/", markup=False, style="bold")
        if report.evidence != evidence:
            evidence = report.evidence
            console.print(f"  {evidence}", markup=False)
        found = f"[{len(report.findings)} finding(s)] " if report.findings else ""
        console.print(f"    {found}{report.path.name}", markup=False)
    for report in reports:
        for finding in report.findings:
            console.print(f"{report.path}: {finding.field}: {finding.message}", markup=False)
    failed = sum(1 for r in reports if not r.ok)
    console.print(f"{len(reports) - failed} hold, {failed} with findings", markup=False)


def _catalog_of(recipe: Path, catalog: Path | None) -> tuple[Path, ReferenceTables]:
    from openrecipes.catalog.hardware import load_reference_tables
    from openrecipes.catalog.paths import catalog_root

    root = catalog or catalog_root(recipe)
    if root is None:
        raise UserError(f"{recipe}: not under a catalog's recipes/<model>/<gpu>/; give --catalog")
    return root.resolve(), load_reference_tables(root.resolve())


def reproduce_command(
    recipe: Annotated[Path, typer.Argument(help="the recipe you ran (its YAML file)")],
    logs: Annotated[list[Path], typer.Argument(help="your run's training log(s)")],
    by: Annotated[str, typer.Option("--by", help="who ran it, as the recipe will credit it")] = "anonymous",
    note: Annotated[str | None, typer.Option("--note", help="what readers should know about the run")] = None,
    write: Annotated[bool, typer.Option("--write", help="append the entry to the recipe's reproductions:")] = False,
    catalog: CatalogOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the entry as JSON")] = False,
) -> None:
    """Measure your run of a recipe with the recipe's window: published vs reproduced tokens/s per GPU, the delta
    against the recipe's noise band, your loss curve against the recipe's own, the stack. Exit 0 when it holds,
    1 when it lands outside the band or the loss curve fails, 2 on bad input."""
    from openrecipes.audit.reproduce import check_writable, reproduce, write_reproduction
    from openrecipes.catalog.store import load_recipe

    root, tables = _catalog_of(recipe, catalog)
    loaded = load_recipe(recipe)
    reproduced = reproduce(loaded, logs, root, tables, by, note)
    if write:
        check_writable(recipe, reproduced)  # bad input, whether or not the run holds
    written = write and reproduced.holds  # a run that fails the check is reported, never added to the recipe
    if written:
        write_reproduction(recipe, reproduced, tables)
    if as_json:
        print(json_text(reproduced.as_json()))
    else:
        _print_reproduction(reproduced, recipe, written)
    if not reproduced.holds:
        if write:
            typer.echo(f"not written to {recipe}: the reproduction does not hold (outside the noise band or its "
                       "loss curve fails)", err=True)
        raise typer.Exit(EXIT_CHECK_FAILED)


def _print_reproduction(reproduced: Reproduced, recipe: Path, written: bool) -> None:
    e = reproduced.entry
    lines = [
        f"published   {reproduced.published:,.2f} tokens/s per GPU ({recipe})",
        f"reproduced  {e.tokens_per_s_per_gpu:,.2f} tokens/s per GPU over steps {e.window[0]}-{e.window[1]} "
        f"(step-time CV {e.step_time_cv_percent}%)",
        f"delta       {e.delta_percent:+.2f}%: {'inside' if e.within_noise_band else 'OUTSIDE'} the noise band "
        f"±{e.noise_band_percent}% (docs/trust.md)",
    ]
    if e.convergence is None:
        lines.append(f"convergence not checked: {'; '.join(reproduced.convergence_reasons)}")
    else:
        lines.append(f"convergence {e.convergence.result} against the recipe's candidate log (correlation "
                     f"{e.convergence.correlation}, final loss difference {e.convergence.final_loss_difference})")
        lines += [f"  - {reason}" for reason in reproduced.convergence_reasons]
    line = reproduced.stack_line
    lines.append("stack       " + (" ".join(f"{k}={v}" for k, v in vars(line).items() if v) if line else
                                   "the log prints no 'openrecipes stack:' line"))
    lines += [f"  - differs: {difference}" for difference in reproduced.stack_differences]
    if written:
        lines.append(f"written to {recipe} (reproductions: {e.date}, {e.by})")
    Console(highlight=False, soft_wrap=True).print("\n".join(lines), markup=False)


def record_command(
    run_dir: Annotated[Path, typer.Argument(
        help="the measured run's folder under runs/: train.log, and command.sh when the run was not --like's command")],
    like: Annotated[Path, typer.Option(
        "--like", help="a recipe of the run's model and GPU type (the layout is read from the run's command)")],
    name: Annotated[str, typer.Option("--name", help="file name of the new recipe, without .yaml")],
    reference: Annotated[Path | None, typer.Option(
        "--reference", help="the reference arm's run folder (default: the --like recipe's reference arm)")] = None,
    catalog: CatalogOption = None,
) -> None:
    """Write a new recipe from a measured run: layout from the run's command; result, correctness, stack and log
    hashes from its logs; the --like recipe's otherwise; written only when it validates and audits clean."""
    from openrecipes.atomic import locked
    from openrecipes.audit.record import recipe_text, record, recorded_path, reference_arm, run_arm, write_recipe
    from openrecipes.catalog.store import load_recipe
    from openrecipes.measure.logtext import require_log_text

    root, tables = _catalog_of(like, catalog)
    base = load_recipe(like)
    if reference is None:
        if base.runs is None:
            raise UserError(f"{like}: names no runs:, so there is no reference arm; give --reference RUN_DIR")
        reference = root / (base.runs.reference or base.runs.candidate)
    path = recorded_path(like, name, [run_dir, reference], root)
    arms = run_arm(run_dir, base.run), reference_arm(base, reference, root, tables)
    for arm in arms:
        require_log_text(arm.log)  # evidence the site ships: a training log, never a page or script
    recorded = record(base, *arms, root, tables)
    header = "# Written by `openrecipes record` from a measured run; fields: schema/recipe.schema.yaml.\n"
    with locked(path):  # one writer of a name at a time: a second `record` of it finds the first one's file
        if path.exists():
            raise UserError(f"{path}: already exists; choose another --name")
        write_recipe(path, recipe_text(recorded.recipe, header), tables, root)
    typer.echo(f"wrote {path}: {recorded.recipe.result.tokens_per_s_per_gpu:,.2f} tokens/s per GPU, correctness "
               f"{recorded.recipe.correctness.result}, evidence re-derived")


def register(app: typer.Typer) -> None:
    app.command("audit")(audit_command)
    app.command("reproduce")(reproduce_command)
    app.command("record")(record_command)
