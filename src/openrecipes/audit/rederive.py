"""One recipe's figures re-derived from its raw logs under runs/ and compared at the precision it publishes them.

- result: measure over result.window from the candidate's train.log (the reference's tokens/s from its log);
- correctness.convergence: check convergence between the candidate's and the reference's logs;
- correctness.configuration: check config between the reference arm's command and the recipe's run;
- stack: the 'openrecipes stack:' line rank 0 printed (torchtitan runs);
- runs.<arm>_sha256: each log's digest;
- reproductions: each entry re-measured from its own log.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel

from openrecipes import figures
from openrecipes.audit.reproduce import reproduce
from openrecipes.audit.stack import compare_stack
from openrecipes.catalog.command import parse_or_fail
from openrecipes.catalog.hardware import ReferenceTables
from openrecipes.catalog.model import Recipe, Reproduction, RunFolders
from openrecipes.catalog.paths import RUN_LOG, evidence_problem
from openrecipes.catalog.yamlio import YamlDocument
from openrecipes.digest import file_sha256
from openrecipes.errors import UserError
from openrecipes.measure.formats import detect_format, prints_stack, read_log_lines
from openrecipes.measure.result import Measured, measure, read_run, run_inputs
from openrecipes.measure.stack import read_stack_line
from openrecipes.verdict import Figure, Finding
from openrecipes.verify.config import Rules
from openrecipes.verify.convergence import read_curve
from openrecipes.verify.verdicts import config_verdict, convergence_verdict

# The stored figures (figures.STORED) are compared with the figure as written (half a unit of its last digit); these
# result fields exactly.
_EXACT_RESULT_FIELDS = ("steps_per_run", "window_tokens", "measured")


@dataclass(frozen=True)
class AuditInputs:
    """What the audit of one recipe reads: the recipe, its YAML as written, where its runs/ folders are, the
    reference arm's command when known, and the tables prices and peaks come from."""

    recipe: Recipe
    doc: YamlDocument
    root: Path  # the catalog root runs/ paths are relative to
    tables: ReferenceTables
    rules: Rules
    reference_run: str | None  # the reference arm's command: its recipe's run, or command.sh beside its log


def _compare_rounded(doc: YamlDocument, field: str, published: float | None, derived: float | None,
                     source: str) -> Iterator[Finding]:
    if published is None or derived is None:
        if published != derived:
            said = "is missing" if published is None else f"is {published}"
            yield Finding(field, published, derived, f"{said} but {source} gives {derived}")
        return
    text = doc.raw.get(field, str(published))
    if not figures.within_published_rounding(derived, text):
        yield Finding(field, text, derived, f"is {text} but {source} gives {derived}; the published figure must "
                      f"round to it (within ±{figures.published_half_unit(text):g})")


def _compare_exact(field: str, published: Figure, derived: Figure, source: str) -> Iterator[Finding]:
    if published != derived:
        yield Finding(field, published, derived, f"is {published} but {source} gives {derived}")


def _as_figure(value: Figure | datetime.date | tuple[int, ...] | BaseModel) -> Figure:
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, tuple):
        return str(list(value))
    if isinstance(value, BaseModel):
        return str(value.model_dump(exclude_none=True))
    return value


def _log(ev: AuditInputs, folder: str) -> Path:
    return ev.root / folder / RUN_LOG


def check_pins(ev: AuditInputs, runs: RunFolders) -> Iterator[Finding]:
    for arm, folder, pinned in (("candidate", runs.candidate, runs.candidate_sha256),
                                ("reference", runs.reference, runs.reference_sha256)):
        log = _log(ev, folder) if folder is not None else None
        if log is None or not log.is_file():
            continue  # the validator reports a missing log
        field, digest = f"runs.{arm}_sha256", file_sha256(log)
        if pinned is None:
            yield Finding(field, None, digest, f"is missing; pin the log the figures come from: "
                          f"`{arm}_sha256: {digest}` under runs:")
        elif pinned != digest:
            yield Finding(field, pinned, digest, f"{log} has sha256 {digest}, not the pinned one: the log was edited "
                          "or swapped; restore the measured log, or measure the new one and pin it")


def measure_log(log: Path, recipe: Recipe, tables: ReferenceTables) -> Measured:
    return measure(read_run([log]), run_inputs(recipe, tables), None)


def check_result(ev: AuditInputs, runs: RunFolders) -> Iterator[Finding]:
    r, log = ev.recipe.result, _log(ev, runs.candidate)
    if not log.is_file():
        return
    source = f"`openrecipes measure` of {log.relative_to(ev.root)} over steps {r.window[0]}-{r.window[1]}"
    try:
        derived = measure_log(log, ev.recipe, ev.tables)
    except UserError as error:
        yield Finding("runs.candidate", runs.candidate, None, f"its log cannot be measured: {error}")
        return
    for figure in figures.STORED:
        yield from _compare_rounded(ev.doc, f"result.{figure.name}", getattr(r, figure.name),
                                    getattr(derived, figure.name), source)
    for name in _EXACT_RESULT_FIELDS:
        yield from _compare_exact(f"result.{name}", _as_figure(getattr(r, name)), _as_figure(getattr(derived, name)),
                                  source)
    reference = _log(ev, runs.reference) if runs.reference is not None else None
    if reference is None or not reference.is_file():
        return
    try:
        reference_figures = measure_log(reference, ev.recipe, ev.tables)
    except UserError as error:
        yield Finding("runs.reference", runs.reference, None, f"its log cannot be measured: {error}")
        return
    yield from _compare_rounded(ev.doc, "result.reference_tokens_per_s_per_gpu", r.reference_tokens_per_s_per_gpu,
                                reference_figures.tokens_per_s_per_gpu,
                                f"`openrecipes measure` of {reference.relative_to(ev.root)} over the same window")


def check_convergence_block(ev: AuditInputs, runs: RunFolders) -> Iterator[Finding]:
    if runs.reference is None:
        return
    candidate, reference = _log(ev, runs.candidate), _log(ev, runs.reference)
    if not (candidate.is_file() and reference.is_file()):
        return
    published = ev.recipe.correctness.convergence
    source = "`openrecipes check convergence` of the two arms' logs"
    try:
        verdict = convergence_verdict(read_curve(candidate), read_curve(reference))
    except UserError as error:
        yield Finding("correctness.convergence", None, None, f"cannot be re-derived: {error}")
        return
    if published is None:
        yield Finding("correctness.convergence", None, verdict.result,
                      "is missing but runs: holds both arms; add the verdict `openrecipes check convergence` gives")
        return
    for name in ("result", "steps", "pointwise_failures"):
        yield from _compare_exact(f"correctness.convergence.{name}", getattr(published, name),
                                  getattr(verdict, name), source)
    for name in ("correlation", "final_loss_difference"):
        yield from _compare_rounded(ev.doc, f"correctness.convergence.{name}", getattr(published, name),
                                    getattr(verdict, name), source)


def check_configuration(ev: AuditInputs, runs: RunFolders) -> Iterator[Finding]:
    if runs.reference is None:
        return
    published = ev.recipe.correctness.configuration
    if ev.reference_run is None:
        yield Finding("correctness.configuration", published, None, "cannot be re-derived: no recipe in the catalog "
                      f"has runs.candidate {runs.reference} and that folder holds no command.sh; add the "
                      "reference arm's recipe or its command")
        return
    verdict = config_verdict(parse_or_fail(ev.reference_run, "the reference arm's command"),
                             parse_or_fail(ev.recipe.run, "run"), ev.rules)
    if not published.startswith(verdict.result):
        yield Finding("correctness.configuration", published, verdict.result,
                      f"is '{published}' but `openrecipes check config` against the reference arm's command gives "
                      f"'{verdict.result}' ({'; '.join(verdict.reasons) or 'placement only'})")


def check_stack(ev: AuditInputs, runs: RunFolders) -> Iterator[Finding]:
    log = _log(ev, runs.candidate)
    if not log.is_file():
        return
    lines = read_log_lines(log)
    line = read_stack_line(lines)
    if line is None:
        if prints_stack(detect_format(log, lines)):  # our torchtitan entry module prints it; other engines do not
            yield Finding("stack", None, None, f"{log.relative_to(ev.root)} has no 'openrecipes stack:' line; run "
                          "through `openrecipes run` (its entry module prints the versions on rank 0)")
        return
    yield from compare_stack(ev.recipe, line, f"the stack line of {log.relative_to(ev.root)}")


def check_reproductions(ev: AuditInputs) -> Iterator[Finding]:
    """Each entry measured again from its own log, as `openrecipes reproduce` measured it, field by field."""
    for i, entry in enumerate(ev.recipe.reproductions):
        at, log = f"reproductions.{i}", ev.root / entry.log
        problem = evidence_problem(ev.root, entry.log, folder=False)
        if problem:  # never followed outside the catalog
            yield Finding(f"{at}.log", entry.log, None, problem)
            continue
        try:
            reproduced = reproduce(ev.recipe, [log], ev.root, ev.tables, entry.by, entry.note, skip=i)
        except UserError as error:
            yield Finding(f"{at}.log", entry.log, None, f"cannot be measured: {error}")
            continue
        derived = reproduced.entry
        if reproduced.copy_of is not None:
            yield Finding(f"{at}.log", entry.log, None, f"is the run of {reproduced.copy_of}: a reproduction is a new "
                          "run with its own log; remove the entry")
        source = f"`openrecipes reproduce` of {entry.log}"
        if derived.log_sha256 != entry.log_sha256:
            yield Finding(f"{at}.log_sha256", entry.log_sha256, derived.log_sha256, f"{entry.log} has sha256 "
                          f"{derived.log_sha256}, not the pinned one: the log was edited or swapped")
        for name in ("tokens_per_s_per_gpu", "step_time_cv_percent", "delta_percent", "noise_band_percent"):
            yield from _compare_rounded(ev.doc, f"{at}.{name}", getattr(entry, name), getattr(derived, name), source)
        for name in ("date", "gpu", "stack", "window", "within_noise_band"):
            yield from _compare_exact(f"{at}.{name}", _as_figure(getattr(entry, name)),
                                      _as_figure(getattr(derived, name)), source)
        yield from _compare_reproduced_convergence(ev.doc, f"{at}.convergence", entry, derived, source)


def _compare_reproduced_convergence(doc: YamlDocument, at: str, entry: Reproduction, derived: Reproduction,
                                    source: str) -> Iterator[Finding]:
    if entry.convergence is None or derived.convergence is None:
        yield from _compare_exact(at, str(entry.convergence), str(derived.convergence), source)
        return
    yield from _compare_exact(f"{at}.result", entry.convergence.result, derived.convergence.result, source)
    for name in ("correlation", "final_loss_difference"):
        yield from _compare_rounded(doc, f"{at}.{name}", getattr(entry.convergence, name),
                                    getattr(derived.convergence, name), source)


def check_logged_recipe(ev: AuditInputs, runs: RunFolders) -> list[Finding]:
    """Every re-derivation of a recipe that names runs: (the recipe's `runs` block)."""
    checks = (check_pins, check_result, check_convergence_block, check_configuration, check_stack)
    return [finding for check in checks for finding in check(ev, runs)]
