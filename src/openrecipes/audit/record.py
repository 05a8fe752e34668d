"""A measured run written as a new recipe: `openrecipes record RUN_DIR --like RECIPE --name NAME`, and the path
`tune` writes its winner through.

The new recipe is the --like recipe (same model and GPU type) with everything a run decides filled in by our code:
the layout, GPU count and batch shape read from the run's own command (catalog/layout_reader.py), the result block
(measure over the recipe's window, clipped into a shorter run), the stack (the run's stack line), correctness
(check config and check convergence against the reference arm), runs: with each log's sha256. It is built as a
typed Recipe, validated, written only when it validates and audits clean, atomically.
"""

from __future__ import annotations

import datetime
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import yaml
from pydantic import ValidationError

from openrecipes import figures
from openrecipes.atomic import Ours, check_output
from openrecipes.audit.evidence import CORRELATION_DECIMALS, LOSS_DIFFERENCE_DECIMALS
from openrecipes.audit.review import audit, catalog_entries, reference_run
from openrecipes.audit.stack import stack_fields
from openrecipes.catalog.command import parse_or_fail
from openrecipes.catalog.hardware import ReferenceTables
from openrecipes.catalog.layout_reader import with_command_layout
from openrecipes.catalog.model import Convergence, Correctness, Recipe, RunFolders
from openrecipes.catalog.paths import RUN_COMMAND, RUN_LOG, relative_path
from openrecipes.catalog.validate import validate_file
from openrecipes.digest import file_sha256
from openrecipes.errors import UserError
from openrecipes.measure.formats import read_log_lines
from openrecipes.measure.result import clip_window, measure, read_run, run_inputs
from openrecipes.measure.stack import read_stack_line
from openrecipes.names import is_plain_name, plain_name
from openrecipes.textfile import read_text, shown
from openrecipes.verify.config import MAX_SCRIPT_BYTES, PASS, PRECISION_CHANGE, load_rules
from openrecipes.verify.convergence import read_curve
from openrecipes.verify.verdicts import ConfigVerdict, ConvergenceVerdict, config_verdict, convergence_verdict

# A run shorter than 36 s on one GPU still took GPU time: the published figure is at least one unit of its 0.01.
MIN_GPU_HOURS = 0.01
GPU_HOURS_NOTE = ("GPUs x (first to last timestamp of the log), compile warm-up included; machine start not "
                  "included (floored at 0.01)")


@dataclass(frozen=True)
class RecordedRun:
    """A measured run: its folder under the catalog (train.log inside) and its exact command."""

    folder: Path
    run: str

    @property
    def log(self) -> Path:
        return self.folder / RUN_LOG


@dataclass(frozen=True)
class Recorded:
    recipe: Recipe
    config: ConfigVerdict  # the candidate's command against the reference's
    convergence: ConvergenceVerdict  # the candidate's loss curve against the reference's


def run_arm(folder: Path, fallback_run: str | None = None) -> RecordedRun:
    """A run folder as an arm: its command.sh, else `fallback_run` (the recipe it ran)."""
    folder = Path(folder)
    if not (folder / RUN_LOG).is_file():
        raise UserError(f"{folder}: no {RUN_LOG}; give the folder `openrecipes run --out` wrote")
    script = folder / RUN_COMMAND
    if script.is_file():
        return RecordedRun(folder, read_text(script, MAX_SCRIPT_BYTES, "run script"))
    if fallback_run is None:
        raise UserError(f"{folder}: no {RUN_COMMAND}; write the run's exact command there")
    return RecordedRun(folder, fallback_run)


def recorded_path(like: Path, name: str, runs: list[Path], root: Path) -> Path:
    """Where `record --like LIKE --name NAME` writes: NAME.yaml beside the --like recipe, which lies under the
    catalog's recipes/ once every link is followed; NAME a plain name and each run folder a plain-named folder under
    the catalog's runs/. Checked before anything is measured, so nothing lands outside the catalog."""
    plain_name(name, "--name")
    recipes, folder = (root / "recipes").resolve(), Path(like).resolve().parent
    if not folder.is_relative_to(recipes):
        raise UserError(f"--like {shown(like)}: leads outside the catalog's recipes/ (to {shown(folder)}); the new "
                        f"recipe is written beside it: give a recipe under {shown(recipes)}")
    for run in runs:
        resolved = Path(run).resolve()
        if not resolved.is_relative_to((root / "runs").resolve()) or not is_plain_name(resolved.name):
            raise UserError(f"{shown(run)}: not a plainly named folder under the catalog's runs/ ({shown(root)}/runs); "
                            "a recipe cites its runs there: move the run folder there")
    return folder / f"{name}.yaml"


def reference_arm(like: Recipe, folder: Path, root: Path, tables: ReferenceTables) -> RecordedRun:
    """The reference arm in `folder`, its command from command.sh there, else from the recipe that measured it
    (`like` itself, or the recipe whose candidate is like's reference arm)."""
    folder, runs, fallback = Path(folder), like.runs, None
    if runs is not None and (root / runs.candidate).resolve() == folder.resolve():
        fallback = like.run
    elif runs is not None and runs.reference and (root / runs.reference).resolve() == folder.resolve():
        fallback = reference_run(like, root, catalog_entries(root, tables))
    return run_arm(folder, fallback)


def record(like: Recipe, candidate: RecordedRun, reference: RecordedRun, root: Path, tables: ReferenceTables,
           notes: str | None = None, window: tuple[int, int] | None = None) -> Recorded:
    """The recipe of `candidate`'s run, shaped like `like` with the layout, GPU count and batch shape read from
    the run's own command (a torchtitan run; another engine's keeps like's), checked against `reference`. Nothing
    is written."""
    command = parse_or_fail(candidate.run, candidate.folder)
    like = with_command_layout(like, command, str(candidate.folder), tables.models[like.model])
    table = read_run([candidate.log])
    steps = table.steps[-1].step + 1
    window = window or clip_window(like.result.window, steps)
    inputs = run_inputs(like, tables, steps_per_run=steps, window=window)
    measured = measure(table, inputs, None)
    reference_measured = measure(read_run([reference.log]), inputs, None)
    rules = load_rules()
    config = config_verdict(parse_or_fail(reference.run, reference.folder), command, rules)
    convergence = convergence_verdict(read_curve(candidate.log), read_curve(reference.log))
    passed = config.result in (PASS, PRECISION_CHANGE) and convergence.passed  # FP8's bar is convergence
    where = {arm: relative_path(arm.folder, root) for arm in (candidate, reference)}

    line = read_stack_line(read_log_lines(candidate.log))
    stack = like.stack
    if line is not None:
        stack = stack.model_copy(update={
            **{field: line.get(printed) for field, printed in stack_fields(like).items()
               if line.get(printed) is not None},
            "source": f"the 'openrecipes stack:' line rank 0 printed ({relative_path(candidate.log, root)})"})
    result = like.result.model_copy(update={
        **{name: getattr(measured, name) for name in (*(f.name for f in figures.STORED), "steps_per_run", "window",
                                                      "window_tokens")},
        "measured": measured.measured or datetime.date.today(),
        "runs": 1,
        "profiler": False,
        "gpu_hours": max(measured.gpu_hours or 0.0, MIN_GPU_HOURS),
        "gpu_hours_note": GPU_HOURS_NOTE,
        "reference_tokens_per_s_per_gpu": reference_measured.tokens_per_s_per_gpu,
    })
    verdict = convergence.result
    block = None
    if convergence.correlation is not None and convergence.final_loss_difference is not None:
        block = Convergence(
            steps=max(convergence.steps, 1), result=verdict,
            correlation=round(convergence.correlation, CORRELATION_DECIMALS),
            final_loss_difference=round(convergence.final_loss_difference, LOSS_DIFFERENCE_DECIMALS),
            pointwise_failures=convergence.pointwise_failures or 0,
            note=f"candidate arm: {where[candidate]}; reference arm: {where[reference]}")
    correctness = Correctness(
        result="pass" if passed else "fail",
        summary=f"configuration {config.result}, {steps}-step convergence {verdict} against the reference arm "
                f"{where[reference]}",
        reference=f"{where[reference]}",
        configuration=config.result,
        component_tests=[],
        convergence=block,
        rules=like.correctness.rules,
    )
    runs = RunFolders(candidate=where[candidate], candidate_sha256=file_sha256(candidate.log),
                      reference=where[reference], reference_sha256=file_sha256(reference.log))
    recipe = like.model_copy(update={
        "status": "measured", "stack": stack, "result": result, "correctness": correctness, "runs": runs,
        "run": candidate.run, "env": command.exports, "reproductions": [],
        "notes": notes if notes is not None else like.notes,
    })
    try:
        return Recorded(recipe.revalidated(), config, convergence)
    except ValidationError as error:  # a figure out of range: the run and the --like recipe do not belong together
        first = error.errors()[0]
        field = ".".join(str(part) for part in first["loc"])
        raise UserError(f"{candidate.folder}: recorded with the --like recipe's {like.model} on {like.gpu.type}, "
                        f"{field} is {first['input']} ({first['msg'].lower()}); give a --like recipe of the run's "
                        "model and GPU") from None


def recipe_text(recipe: Recipe, header: str) -> str:
    class Dumper(yaml.SafeDumper):
        pass

    Dumper.add_representer(str, lambda d, v: d.represent_scalar(
        "tag:yaml.org,2002:str", v, style="|" if "\n" in v else None))
    data = recipe.model_dump(mode="json")
    if not data["reproductions"]:
        del data["reproductions"]
    return header + yaml.dump(data, Dumper=Dumper, sort_keys=False, width=1000, allow_unicode=True)


def write_recipe(path: Path, text: str, tables: ReferenceTables, root: Path | None = None, *, option: str = "--out",
                 ours: Ours | None = None, force: bool = False) -> None:
    """Put a recipe into the catalog only once it validates (one invalid file makes the catalog refuse to load)
    and, given the catalog `root`, audits clean. The text is checked in a temporary file beside `path` (so the
    path checks see its folder), then renamed into place; on failure a UserError names the problems and nothing
    is left behind. What `path` may be follows the output rule (openrecipes.atomic: new, or `ours`)."""
    path = Path(path)
    check_output(path, option, ours, force)
    created = [folder for folder in (path.parent, *path.parent.parents) if not folder.exists()]
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=path.parent, prefix=f".{path.name}.", suffix=".tmp", delete=False,
                                     encoding="utf-8") as temp:
        temp.write(text)
    try:
        report = validate_file(Path(temp.name), tables)
        if not report.ok:
            errors = "; ".join(f"{e.field or '(file)'}: {e.message}" for e in report.errors)
            raise UserError(f"{path}: the recipe does not validate, so it was not written: {errors}")
        if root is not None:
            findings = [f for r in audit(root, [Path(temp.name)]) for f in r.findings]
            if findings:
                shown = "; ".join(f"{f.field}: {f.message}" for f in findings)
                raise UserError(f"{path}: the recipe does not audit clean, so it was not written: {shown}")
        check_output(path, option, ours, force)  # again: validating took time, and the path may have changed
        os.replace(temp.name, path)
    except BaseException:
        Path(temp.name).unlink(missing_ok=True)
        for folder in created:  # innermost first; only the folders made for this file, and only while empty
            try:
                folder.rmdir()
            except OSError:
                break
        raise
