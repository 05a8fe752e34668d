"""The winner written as a catalog recipe with its reference arm and checks."""

from __future__ import annotations

import copy
import datetime
import os
import tempfile
from pathlib import Path

import yaml

from openrecipes.atomic import write_atomic
from openrecipes.catalog.hardware import ReferenceTables
from openrecipes.catalog.paths import relative_path
from openrecipes.catalog.validate import validate_file
from openrecipes.errors import UserError
from openrecipes.plan.tune.candidates import Candidate
from openrecipes.plan.tune.search import Setup, TuneResult


def winner_recipe(s: Setup, result: TuneResult, config: dict, convergence: dict) -> dict:
    winner, reference = result.winner, result.reference
    m = winner.measurement
    arm = winner.arm if winner.arm is not None else reference.arm
    data = copy.deepcopy(arm.data)
    data["status"] = "measured"
    stack = m.stack
    if stack:
        data["stack"].update(pytorch=stack.get("torch", data["stack"]["pytorch"]),
                             cuda=stack.get("cuda", data["stack"]["cuda"]), nccl=stack.get("nccl", data["stack"]["nccl"]),
                             python=stack.get("python", data["stack"]["python"]),
                             torchtitan=stack.get("torchtitan", data["stack"]["torchtitan"]),
                             source=f"the 'openrecipes stack:' line rank 0 printed ({relative_path(m.log, s.root)})")
    data["result"].update(
        tokens_per_s_per_gpu=m.result["tokens_per_s_per_gpu"], usd_per_million_tokens=m.result["usd_per_million_tokens"],
        step_time_cv_percent=m.result["step_time_cv_percent"], mfu=m.result["mfu"],
        measured=datetime.date.fromisoformat(m.result["measured"]) if m.result["measured"] else datetime.date.today(),
        steps_per_run=m.result["steps_per_run"], window=list(m.window), window_tokens=m.result["window_tokens"],
        runs=1, profiler=False, gpu_hours=max(m.result["gpu_hours"] or 0.0, 0.01),
        gpu_hours_note="GPUs x (first to last timestamp of the log), compile warm-up included; machine start not "
                       "included (floored at 0.01)",
        reference_tokens_per_s_per_gpu=reference.measurement.tokens_per_s_per_gpu)
    passed = config["result"] == "pass" and convergence["passed"]
    measured = len(result.measured)
    data["correctness"] = {
        "result": "pass" if passed else "fail",
        "summary": f"`openrecipes tune`: configuration {config['result']}, {m.result['steps_per_run']}-step convergence "
                   f"{'pass' if convergence['passed'] else 'fail'} against the base recipe's stock configuration",
        "reference": f"{relative_path(result.run_root / 'reference', s.root)}: {relative_path(s.base_path, s.root)} "
                     f"at {m.result['steps_per_run']} steps",
        "configuration": config["result"],
        "component_tests": [],
        "rules": s.base.correctness.rules,
    }
    if convergence["correlation"] is not None and convergence["final_loss_difference"] is not None:
        data["correctness"]["convergence"] = {
            "steps": max(convergence["steps"], 1), "result": "pass" if convergence["passed"] else "fail",
            "correlation": round(convergence["correlation"], 7),
            "final_loss_difference": round(convergence["final_loss_difference"], 6),
            "pointwise_failures": convergence["pointwise_failures"] or 0,
            "note": f"candidate arm: {relative_path(m.log.parent, s.root)}; reference arm: "
                    f"{relative_path(reference.measurement.log.parent, s.root)}; same rows, seed and machine, one after "
                    "the other"}
    data["runs"] = {"candidate": relative_path(m.log.parent, s.root),
                    "reference": relative_path(reference.measurement.log.parent, s.root)}
    dropped = sum(1 for o in result.outcomes if o.measurement is None)
    ooms = [o.candidate.label for o in result.outcomes if o.measurement is not None and o.measurement.oom]
    arms = "; ".join(
        f"{o.candidate.label}{' (reference)' if o is reference else ''}: "
        + (f"{o.measurement.tokens_per_s_per_gpu:,.0f}" if o.measurement.ok else "out of memory" if o.measurement.oom
           else "failed")
        for o in [reference, *result.outcomes] if o.measurement is not None)
    lanes = (f" on {result.lanes} lanes at once ({result.wall_minutes:.1f} wall minutes)" if result.lanes > 1 else "")
    data["notes"] = (
        f"Tuned by `openrecipes tune` from {relative_path(s.base_path, s.root)}: {measured} of {len(s.ranked)} candidate "
        f"layouts measured with {m.result['steps_per_run']}-step runs (window {m.window[0]}-{m.window[1]}), {dropped} "
        f"not measured (cannot win or over budget); {result.spent_minutes:.1f} of {result.budget_minutes:g} budget "
        f"GPU-lane minutes spent{lanes}. Tokens/s/GPU of each arm measured: {arms}. Refitted efficiency "
        f"{result.efficiency.of(winner.candidate.layout):.4f} ({result.efficiency.points} points). Out of memory: "
        f"{', '.join(ooms) or 'none'}. Stopped: {result.stop_reason}.")
    return data


def _dump(data: dict) -> str:
    class Dumper(yaml.SafeDumper):
        pass

    Dumper.add_representer(str, lambda d, v: d.represent_scalar(
        "tag:yaml.org,2002:str", v, style="|" if "\n" in v else None))
    return yaml.dump(data, Dumper=Dumper, sort_keys=False, width=1000, allow_unicode=True)


def default_recipe_path(s: Setup, winner: Candidate) -> Path:
    card_stem = s.tables.model_files[s.base.model].stem
    return s.root / "recipes" / card_stem / s.base.gpu.type.lower() / f"tuned-{winner.slug}.yaml"


def write_winner(s: Setup, result: TuneResult, out_recipe: Path | None = None) -> Path:
    """Check the winner against the reference arm (config, convergence), then write its recipe."""
    from openrecipes.verify.config import check_config
    from openrecipes.verify.convergence import check_convergence, read_curve

    if result.winner is None:
        raise UserError("no candidate ran to the end; nothing to write (see the table above)")
    scripts = {}
    winner_arm = result.winner.arm if result.winner.arm is not None else result.reference.arm
    for name, outcome, arm in (("reference", result.reference, result.reference.arm),
                               ("candidate", result.winner, winner_arm)):
        scripts[name] = outcome.measurement.log.parent / "command.sh"  # each arm's exact command beside its log
        write_atomic(scripts[name], arm.data["run"])
    result.config = check_config(scripts["candidate"], scripts["reference"])
    result.convergence = check_convergence(read_curve(result.winner.measurement.log),
                                           read_curve(result.reference.measurement.log))
    data = winner_recipe(s, result, result.config, result.convergence)
    path = Path(out_recipe) if out_recipe else default_recipe_path(s, result.winner.candidate)
    header = "# Written by `openrecipes tune` from measured short runs; fields: schema/recipe.schema.yaml.\n"
    write_recipe(path, header + _dump(data), s.tables)
    result.recipe_path = path
    return path


def write_recipe(path: Path, text: str, tables: ReferenceTables) -> None:
    """Put a recipe into the catalog only once it validates: one invalid file makes load_catalog refuse the whole
    catalog. The text is validated in a temporary file beside `path` (so the path checks see its folder), then
    renamed into place; on failure a UserError names the field errors and nothing is left behind."""
    path = Path(path)
    created = [folder for folder in (path.parent, *path.parent.parents) if not folder.exists()]
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=path.parent, prefix=f".{path.name}.", suffix=".tmp", delete=False,
                                     encoding="utf-8") as temp:
        temp.write(text)
    try:
        report = validate_file(Path(temp.name), tables)
        if not report.ok:
            errors = "; ".join(f"{e.field or '(file)'}: {e.message}" for e in report.errors)
            raise UserError(f"{path}: the tuned recipe does not validate, so it was not written: {errors}")
        os.replace(temp.name, path)
    except BaseException:
        Path(temp.name).unlink(missing_ok=True)
        for folder in created:  # innermost first; only the folders made for this file, and only while empty
            try:
                folder.rmdir()
            except OSError:
                break
        raise
