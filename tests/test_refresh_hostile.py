"""`refresh` and `refresh --check` against files a stranger changed: an edited plan figure, a plan copied over another
model's, a link, a FIFO, a device, or a calibration value no fit gives. `--check` recomputes or checks the seal of
what it guards, names each file and the fix (exit 1); `refresh` refuses to start on a file it may not read or
write (exit 2, one line); neither follows a link, blocks on a FIFO, or changes a file."""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys

import pytest
from conftest import REPO, openrecipes

from openrecipes.catalog.yamlio import parse_yaml
from openrecipes.plan.constants import CALIBRATION_FILE, calibration_problems
from openrecipes.tune import fingerprint as seal
from openrecipes.tune.refresh import run_step

CALIBRATION = "src/openrecipes/plan/calibration.yaml"
PLAN = "plans/qwen3-8b.json"


@pytest.fixture
def catalog(tmp_path):
    """A clone of the catalog, for the plans step (it loads the catalog and fingerprints it)."""
    root = tmp_path / "catalog"
    for name in ("recipes", "models", "hardware", "rules", "schema", "runs", "plans"):
        shutil.copytree(REPO / name, root / name)
    return root


@pytest.fixture
def clone(tmp_path):
    """What refresh reads before any step: a catalog folder with plans/ and its own code under src/ (so that its
    calibration.yaml, not this package's, is the one refresh checks and would write)."""
    root = tmp_path / "clone"
    (root / "recipes").mkdir(parents=True)
    shutil.copytree(REPO / "plans", root / "plans")
    shutil.copytree(REPO / "src/openrecipes", root / "src/openrecipes",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return root


def _state(root) -> dict[str, tuple]:
    """Every node under the clone's plans/ and planner folder: its kind, and a file's bytes or a link's target."""
    found = {}
    for folder in (root / "plans", root / "src/openrecipes/plan"):
        for path in sorted(folder.iterdir()):
            info = os.lstat(path)
            found[str(path)] = (stat.S_IFMT(info.st_mode), os.readlink(path) if path.is_symlink()
                                else path.read_bytes() if stat.S_ISREG(info.st_mode) else None)
    return found


def _refused(root, what: str) -> None:
    """`refresh --check` fails naming `what` and the fix, `refresh` refuses in one line, and nothing changed."""
    before = _state(root)
    checked = openrecipes("refresh", "--check", cwd=root)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert what in checked.stdout and "Traceback" not in checked.stdout + checked.stderr
    assert "run `openrecipes refresh`" in checked.stdout + checked.stderr
    refused = openrecipes("refresh", cwd=root)
    assert refused.returncode == 2, refused.stdout
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and what in lines[0] and "refresh wrote nothing" in lines[0], lines
    assert _state(root) == before


def test_an_edited_figure_with_its_fingerprint_kept_is_stale(catalog):
    plan = catalog / PLAN
    text = plan.read_text(encoding="utf-8")
    figure = text.index('"tokens_per_s_per_gpu": ') + len('"tokens_per_s_per_gpu": ')
    plan.write_text(text[:figure] + "9" + text[figure:], encoding="utf-8")
    stale = run_step("plans", catalog, check=True).stale
    assert stale == "qwen3-8b.json (edited, or written before the catalog or the planner last changed)"


def test_a_plan_copied_over_another_models_is_stale(catalog):
    shutil.copy(catalog / "plans/qwen3-4b.json", catalog / PLAN)
    assert "qwen3-8b.json (edited" in run_step("plans", catalog, check=True).stale


def test_a_cut_short_or_foreign_plan_file_is_stale(catalog):
    (catalog / PLAN).write_text('{"fingerprint": "x"}\n', encoding="utf-8")
    assert run_step("plans", catalog, check=True).stale == "qwen3-8b.json (not a plan file the export wrote)"


@pytest.mark.parametrize("where", [PLAN, "src/openrecipes/plan/heldout.json", CALIBRATION])
def test_a_link_is_refused_never_followed(clone, where):
    path = clone / where
    target = clone / "elsewhere" / path.name
    target.parent.mkdir()
    shutil.copy(path, target)
    path.unlink()
    path.symlink_to(target)
    _refused(clone, f"{path}: is a symbolic link, not a regular file")


def test_plans_as_a_link_to_a_folder_is_refused(clone):
    shutil.move(clone / "plans", clone / "other-plans")
    (clone / "plans").symlink_to(clone / "other-plans")
    _refused(clone, f"{clone / 'plans'}: is a symbolic link, not a folder")


@pytest.mark.parametrize("where", [PLAN, "src/openrecipes/plan/public_record.json", CALIBRATION])
def test_a_fifo_fails_at_once_never_blocks(clone, where):
    """In a process of its own with a time limit: a read that blocked on the FIFO would be a hang, not a failure."""
    path = clone / where
    path.unlink()
    os.mkfifo(path)
    env = {**os.environ, "PYTHONPATH": str(clone / "src")}
    for args, code in ((["--check"], 1), ([], 2)):
        done = subprocess.run([sys.executable, "-m", "openrecipes", "refresh", *args], cwd=clone, env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == code, done.stdout + done.stderr
        assert f"{path}: is a FIFO, not a regular file" in done.stdout + done.stderr
    assert stat.S_ISFIFO(os.lstat(path).st_mode)


@pytest.mark.skipif(os.geteuid() != 0, reason="making a device node needs root")
def test_a_device_is_refused(clone):
    path = clone / PLAN
    path.unlink()
    os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    _refused(clone, f"{path}: is a device, not a regular file")


ABSURD = [("1e308", "is '1e308', not a number (a decimal point makes it one"), ("1.0e+308", "is 1.0e+308, outside"),
          (".nan", "is '.nan', not a number"), (".inf", "is '.inf', not a number"), ("-0.5", "is -0.5, outside (0, 1]"),
          ("0.0", "is 0.0, outside (0, 1]"), ("1.5", "is 1.5, outside (0, 1]"), ("true", "is 'true', not a number"),
          ("'0.5'", "is '0.5', not a number"), ("[0.5]", "is '[0.5]', not a number"), ("~", "is '~', not a number"),
          ("1.0e-9", "is 1.0e-9, more than 100 times off its prior 0.5")]


def _first_fitted(text: str) -> re.Match[str]:
    """The calibration's first fitted efficiency (its key and value line): every refit changes the value."""
    found = re.search(r"^  (compute_efficiency\.\S+):\n(    value: \S+)\n    prior: 0.5$", text, re.MULTILINE)
    assert found is not None
    return found


@pytest.mark.parametrize(("value", "said"), ABSURD)
def test_an_absurd_calibration_value_is_a_failed_check_naming_the_value_and_line(clone, value, said):
    path = clone / CALIBRATION
    text = path.read_text(encoding="utf-8")
    first = _first_fitted(text)
    line = text[:first.start(2)].count("\n") + 1
    path.write_text(text[:first.start(2)] + f"    value: {value}" + text[first.end(2):], encoding="utf-8")
    _refused(clone, f"{path}:{line}: fitted.{first[1]}.value {said}")


@pytest.mark.parametrize(("old", "new", "said"), [
    ("    prior: 0.5\n", "    prior: -1.0\n", "compute_efficiency.megatron/B200-SXM-180GB.prior is -1.0, outside"),
    ("  runtime_reserve_gib: 4.0", "  runtime_reserve_gib: -4.0", "assumed.runtime_reserve_gib is -4.0, outside"),
    ("    dp: 0.2", "    dp: 2.0", "assumed.exposed_communication.dp is 2.0, outside [0, 1]"),
    ("  measurement_sigma: 0.03", "  measurement_sigma: 0.0", "assumed.measurement_sigma is 0.0, outside (0, inf)"),
])
def test_every_value_of_the_calibration_is_checked(old, new, said):
    text = CALIBRATION_FILE.read_text(encoding="utf-8")
    assert old in text
    problems = calibration_problems(parse_yaml(text.replace(old, new, 1), CALIBRATION_FILE))
    assert len(problems) == 1 and said in problems[0] and "run `openrecipes refresh`" in problems[0]


def test_the_committed_calibration_is_in_range():
    assert calibration_problems(parse_yaml(CALIBRATION_FILE.read_text(encoding="utf-8"), CALIBRATION_FILE)) == []


def test_a_comment_or_docstring_leaves_the_code_fingerprint_and_code_changes_it(tmp_path):
    module = tmp_path / "module.py"
    texts = {"plain": 'def f(x):\n    return x + 1\n',
             "commented": ('"""A module."""\n\n\ndef f(x):  # why\n    """What f does."""\n'
                           '    return (x +\n            1)\n'),
             "changed": 'def f(x):\n    return x + 2\n'}
    seen = {}
    for name, text in texts.items():
        module.write_text(text, encoding="utf-8")
        seen[name] = seal.code_text(module)
    assert seen["plain"] == seen["commented"] != seen["changed"]


def test_only_the_modules_the_export_imports_are_its_code():
    files = {path.relative_to(seal.PACKAGE).as_posix() for path in seal.code_files()}
    assert {"tune/export.py", "tune/fingerprint.py", "plan/predict.py", "engines/torchtitan/layouts.py"} <= files
    assert "tune/report.py" not in files and "tune/refresh.py" not in files and "site/build.py" not in files


def test_plans_go_stale_when_code_they_run_changes_and_only_then(tmp_path, monkeypatch):
    """A code change in speed.py (the export predicts with it), in the renderer or the engine's flag table (a planned
    recipe's command is written from them) makes the plans stale; a comment there, or any change in a module the
    export does not import (tune/report.py, the measure room), leaves them current."""
    import shutil
    from types import SimpleNamespace

    package = tmp_path / "openrecipes"
    shutil.copytree(seal.PACKAGE, package, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(seal, "PACKAGE", package)
    catalog = SimpleNamespace(entries=[], record=[], tables=SimpleNamespace(models={}, variants={}, instances={}))

    def stamp_after(path: str, old: str, new: str) -> str:
        file = package / path
        text = file.read_text(encoding="utf-8")
        assert old in text
        file.write_text(text.replace(old, new, 1), encoding="utf-8")
        try:
            return seal.fingerprint(catalog)
        finally:
            file.write_text(text, encoding="utf-8")

    current = seal.fingerprint(catalog)
    assert stamp_after("plan/speed.py", "\ndef ", "\n# a comment\ndef ") == current
    assert stamp_after("tune/report.py", "\ndef ", "\nUNUSED = 1\n\n\ndef ") == current
    assert stamp_after("measure/steps.py", "\ndef ", "\nUNUSED = 1\n\n\ndef ") == current
    for path in ("plan/speed.py", "launch/torchtitan/render.py", "audit/record.py"):
        assert stamp_after(path, "\ndef ", "\nUNUSED = 1\n\n\ndef ") != current, path
    assert stamp_after("engines/torchtitan/flags.py", "\nFLAGS = (", "\nUNUSED = 1\nFLAGS = (") != current
