"""`openrecipes reproduce RECIPE LOG...`: a user's run of a recipe measured with the recipe's window and set
against the published figure, its noise band, the recipe's own loss curve and its stack; `--write` appends it to
the recipe's `reproductions:` (openrecipes.yamledit: every other byte kept)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import yaml

from openrecipes.atomic import check_regular, locked, write_atomic
from openrecipes.audit.evidence import CORRELATION_DECIMALS, LOSS_DIFFERENCE_DECIMALS
from openrecipes.audit.noise import delta_percent, noise_band_percent
from openrecipes.audit.stack import compare_stack
from openrecipes.catalog.hardware import ReferenceTables
from openrecipes.catalog.model import Recipe, Reproduction, ReproductionConvergence, ReproductionStack
from openrecipes.catalog.paths import RUN_LOG, evidence_problem, relative_path
from openrecipes.catalog.plausibility import implausible, recipe_claim
from openrecipes.catalog.validate import validate_document
from openrecipes.catalog.yamlio import parse_yaml
from openrecipes.digest import file_sha256
from openrecipes.errors import UserError
from openrecipes.measure.formats import read_log_lines
from openrecipes.measure.logtext import require_log_text
from openrecipes.measure.result import clip_window, measure, read_run, run_inputs
from openrecipes.measure.stack import StackLine, read_stack_line
from openrecipes.steptable import StepTable
from openrecipes.verify.convergence import read_curve
from openrecipes.verify.verdicts import convergence_verdict
from openrecipes.yamledit import append_item


@dataclass(frozen=True)
class Reproduced:
    entry: Reproduction
    published: float  # the recipe's tokens/s per GPU
    stack_line: StackLine | None
    stack_differences: tuple[str, ...]  # where the run's versions differ from the recipe's stack:
    convergence_reasons: tuple[str, ...]
    copy_of: str | None = None  # the cited log this run is a copy of: not a reproduction

    @property
    def holds(self) -> bool:
        """Inside the noise band, and the loss curve (where one can be compared) passes."""
        return self.entry.within_noise_band and (self.entry.convergence is None
                                                 or self.entry.convergence.result == "pass")

    def as_json(self) -> dict:
        return {"published_tokens_per_s_per_gpu": self.published, "holds": self.holds,
                **self.entry.model_dump(mode="json"), "convergence_reasons": list(self.convergence_reasons),
                "stack_differences": list(self.stack_differences)}


def reproduction_convergence(curve: dict[int, float], candidate_log: Path
                             ) -> tuple[ReproductionConvergence, tuple[str, ...]]:
    """A reproduction's loss curve checked against the recipe's own candidate log, at the published precision."""
    verdict = convergence_verdict(curve, read_curve(candidate_log))
    correlation, final = verdict.correlation, verdict.final_loss_difference
    return ReproductionConvergence(
        result=verdict.result,
        correlation=None if correlation is None else round(correlation, CORRELATION_DECIMALS),
        final_loss_difference=None if final is None else round(final, LOSS_DIFFERENCE_DECIMALS),
    ), verdict.reasons


def cited_logs(recipe: Recipe, root: Path, skip: int | None = None) -> list[tuple[str, Path]]:
    """The logs a recipe already cites, by field: its arms' and its reproductions' (but entry `skip`), those that
    lie inside the catalog (the validator names the others)."""
    cited = [(f"runs.{arm}", folder, True) for arm, folder in
             (("candidate", recipe.runs.candidate), ("reference", recipe.runs.reference))
             if folder is not None] if recipe.runs is not None else []
    cited += [(f"reproductions.{i}", entry.log, False) for i, entry in enumerate(recipe.reproductions) if i != skip]
    return [(field, root / text / RUN_LOG if folder else root / text) for field, text, folder in cited
            if evidence_problem(root, text, folder=folder) is None]


def same_run(logs: list[Path], table: StepTable, recipe: Recipe, root: Path, skip: int | None = None) -> str | None:
    """The field of a log the recipe already cites that `logs` are a copy of, or None: a reproduction is a new run,
    so its bytes (sha256), its timestamps and its step times are its own."""
    digest = file_sha256(logs[0])
    for field, log in cited_logs(recipe, root, skip):
        if file_sha256(log) == digest:
            return f"{field} (the same sha256)"
        try:
            other = read_run([log])
        except UserError:
            continue  # a cited log that cannot be read is the audit's finding of its own
        if table.first_timestamp is not None and (table.first_timestamp, table.last_timestamp) == (
                other.first_timestamp, other.last_timestamp):
            return f"{field} (the same first and last timestamps)"
        if [(s.step, s.step_time_s, s.loss) for s in table.steps] == [(s.step, s.step_time_s, s.loss)
                                                                      for s in other.steps]:
            return f"{field} (the same step times and losses)"
    return None


def reproduce(recipe: Recipe, logs: list[Path], root: Path, tables: ReferenceTables, by: str,
              note: str | None = None, skip: int | None = None) -> Reproduced:
    """`logs` measured as a reproduction of `recipe`; `skip`: the index of the entry they are (the audit)."""
    if recipe.result.step_time_cv_percent is None:
        raise UserError("a planned recipe was never run, so it has no measured figure to reproduce; run it and "
                        "`openrecipes record` the run")
    for log in logs:
        require_log_text(log)  # evidence the site ships: a training log, never a page or script holding step lines
    table = read_run(logs)
    steps = table.steps[-1].step + 1
    window = clip_window(recipe.result.window, steps)
    measured = measure(table, run_inputs(recipe, tables, steps_per_run=steps, window=window), None)
    claim = recipe_claim(recipe, measured.tokens_per_s_per_gpu, "reproduced tokens/s per GPU")
    if (impossible := implausible(claim, tables.models.get(recipe.model), tables)) is not None:
        raise UserError(f"{logs[0]}: {impossible.field}: {impossible.message}")
    published = recipe.result.tokens_per_s_per_gpu
    delta, band = delta_percent(measured.tokens_per_s_per_gpu, published), noise_band_percent(
        recipe.result.step_time_cv_percent)
    convergence: ReproductionConvergence | None = None
    reasons: tuple[str, ...] = ("the recipe stores no candidate log",)
    if recipe.runs is not None and steps != recipe.result.steps_per_run:
        reasons = (f"a {steps}-step run has another learning-rate schedule than the recipe's "
                   f"{recipe.result.steps_per_run} steps (warm-up and decay follow the run length), so its loss "
                   "curve is not compared; its throughput is",)
    elif recipe.runs is not None:
        curve = {s.step: s.loss for s in table.steps if s.loss is not None}
        convergence, reasons = reproduction_convergence(curve, root / recipe.runs.candidate / RUN_LOG)
    line = read_stack_line([text for log in logs for text in read_log_lines(log)])
    if measured.measured is None:
        raise UserError(f"{logs[0]}: no timestamps; the reproduction's date is read from its log")
    entry = Reproduction(
        date=measured.measured, by=by, gpu=(line.gpu if line and line.gpu else recipe.gpu.type),
        stack=ReproductionStack(**({name: line.get(name) for name in ReproductionStack.model_fields}
                                   if line else {})),
        log=relative_path(logs[0], root), log_sha256=file_sha256(logs[0]), window=window,
        tokens_per_s_per_gpu=measured.tokens_per_s_per_gpu, step_time_cv_percent=measured.step_time_cv_percent,
        delta_percent=delta, noise_band_percent=band, within_noise_band=abs(delta) <= band,
        convergence=convergence, note=note)
    differences = tuple(f"{f.field}: the recipe has {f.published}, the run {f.derived}"
                        for f in compare_stack(recipe, line, "the run's stack line") if f.derived is not None) \
        if line else ()
    return Reproduced(entry, published, line, differences, reasons, same_run(logs, table, recipe, root, skip))


def _entry_lines(entry: Reproduction) -> str:
    data = entry.model_dump(mode="json", exclude_none=True)
    data["window"] = list(entry.window)
    if entry.convergence is None:
        data["convergence"] = None  # written out: null says no candidate log to compare with
    text = yaml.safe_dump([data], sort_keys=False, width=110, allow_unicode=True, default_flow_style=None)
    return "".join(f"  {line}" for line in text.splitlines(keepends=True))


def check_writable(path: Path, reproduced: Reproduced) -> None:
    """What `--write` refuses as bad input whether or not the run holds: a recipe that is no regular file, a log
    outside the catalog, a log the recipe already cites."""
    check_regular(path, "--write")
    entry = reproduced.entry
    if entry.log.startswith(("/", "..")):
        raise UserError(f"{entry.log}: the log lies outside the catalog; copy it under runs/ (e.g. "
                        "runs/reproductions/<name>/train.log) so the entry can point at it, then run again")
    if reproduced.copy_of is not None:
        raise UserError(f"{entry.log}: is the run of {reproduced.copy_of} the recipe already cites; a reproduction "
                        "is a new run of the recipe, with its own log")


def write_reproduction(path: Path, reproduced: Reproduced, tables: ReferenceTables) -> None:
    """Append the entry, validate the new text under the recipe's own path, and replace the file atomically."""
    check_writable(path, reproduced)
    entry = reproduced.entry
    with locked(path):  # the recipe as it is now, with any entry another writer appended meanwhile
        text = path.read_text(encoding="utf-8")
        current = parse_yaml(text, path).data
        cited = len(current.get("reproductions") or []) if isinstance(current, dict) else 0
        updated = append_item(text, ("reproductions",), _entry_lines(entry), str(path), "the recipe was left unchanged")
        report = validate_document(parse_yaml(updated, path), tables)
        written = report.entry
        if not report.ok or not isinstance(written, Recipe) \
                or len(written.reproductions) != cited + 1 or written.reproductions[-1] != entry:
            shown = "; ".join(f"{e.field}: {e.message}" for e in report.errors[:3]) or "the entry does not read back"
            raise UserError(f"{path}: the reproduction would not validate ({shown}); the recipe was left unchanged")
        write_atomic(path, updated)


@dataclass(frozen=True)
class ReproductionSummary:
    """A recipe's reproductions at a glance: how many, and the lowest and highest delta in percent."""

    count: int
    lowest_delta_percent: float | None
    highest_delta_percent: float | None

    def as_json(self) -> dict:
        return asdict(self)


def reproduction_summary(recipe: Recipe) -> ReproductionSummary:
    deltas = [entry.delta_percent for entry in recipe.reproductions]
    return ReproductionSummary(len(deltas), min(deltas, default=None), max(deltas, default=None))
