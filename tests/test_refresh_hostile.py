"""`refresh` and `refresh --check` against files a stranger changed: an edited plan figure, a plan copied over another
model's, a link, a FIFO, a device, or a calibration value no fit gives. `--check` recomputes or checks the seal of
what it guards, names each file and the fix (exit 1); `refresh` refuses to start on a file it may not read or
write (exit 2, one line); neither follows a link, blocks on a FIFO, or changes a file."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, openrecipes

from openrecipes.catalog.store import load_catalog
from openrecipes.catalog.yamlio import parse_yaml
from openrecipes.plan.constants import CALIBRATION_FILE, calibration_problems
from openrecipes.refresh import run_step
from openrecipes.tune import fingerprint as seal

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
    shutil.copytree(REPO / "derived", root / "derived")
    shutil.copytree(REPO / "src/openrecipes", root / "src/openrecipes",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return root


def _state(root) -> dict[str, tuple]:
    """Every node under the clone's plans/, derived/ and planner folder: its kind, and a file's bytes or a link's
    target."""
    found = {}
    for folder in (root / "plans", root / "derived", root / "src/openrecipes/plan"):
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
    stale = run_step("plans", catalog, check=True, sample=0).stale  # the seal alone finds it
    assert stale == "qwen3-8b.json (edited, or written before its inputs or the planner's version last changed)"


def test_a_plan_copied_over_another_models_is_stale(catalog):
    shutil.copy(catalog / "plans/qwen3-4b.json", catalog / PLAN)
    assert "qwen3-8b.json (edited" in run_step("plans", catalog, check=True, sample=0).stale


def test_a_cut_short_or_foreign_plan_file_is_stale(catalog):
    (catalog / PLAN).write_text('{"fingerprint": "x"}\n', encoding="utf-8")
    assert run_step("plans", catalog, check=True, sample=0).stale == "qwen3-8b.json (not a plan file the export wrote)"


@pytest.mark.parametrize("where", [PLAN, "derived/heldout.json", "derived/seals.json", CALIBRATION])
def test_a_link_is_refused_never_followed(clone, where):
    path = clone / where
    target = clone / "elsewhere" / path.name
    target.parent.mkdir()
    shutil.copy(path, target)
    path.unlink()
    path.symlink_to(target)
    _refused(clone, f"{path}: is a symbolic link, not a regular file")


@pytest.mark.parametrize("folder", ["plans", "derived"])
def test_a_written_folder_as_a_link_is_refused(clone, folder):
    shutil.move(clone / folder, clone / f"other-{folder}")
    (clone / folder).symlink_to(clone / f"other-{folder}")
    _refused(clone, f"{clone / folder}: is a symbolic link, not a folder")


@pytest.mark.parametrize("where", [PLAN, "derived/public_record.json", CALIBRATION])
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
          ("1.0e-9", "is 1.0e-9, more than 100 times off its prior 0.6")]


def _first_fitted(text: str) -> re.Match[str]:
    """The calibration's fitted flash-attention efficiency, a share of peak (its key and value line): every refit
    changes the value."""
    found = re.search(r"^  (attention_efficiency):\n(    value: \S+)\n    prior: 0.6$", text, re.MULTILINE)
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


@pytest.mark.parametrize("text", ["not json", '{"entries": "qwen3-8b"}'])
def test_a_snapshot_of_the_fit_that_is_not_a_list_of_slugs_is_refused_before_any_step(clone, text):
    (clone / "derived/fitted_on.json").write_text(text, encoding="utf-8")
    _refused(clone, f"{clone / 'derived/fitted_on.json'}: ")


@pytest.mark.parametrize(("old", "new", "said"), [
    ("    prior: 1.0\n", "    prior: -1.0\n", "compute_efficiency.megatron/B200-SXM-180GB.prior is -1.0, outside"),
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


SEALS_OF = ("import json, sys\nfrom pathlib import Path\nfrom openrecipes.catalog.store import load_catalog\n"
            "from openrecipes.tune.fingerprint import plan_inputs\n"
            "print(json.dumps(plan_inputs(load_catalog(Path(sys.argv[1])))))")


def _seals_with_code(package, catalog) -> dict[str, str]:
    """Every plan's seal input as the package at `package` (a copy, maybe edited) computes it, in its own process."""
    done = subprocess.run([sys.executable, "-c", SEALS_OF, str(catalog)], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(package.parent)}, check=True)
    return json.loads(done.stdout)


@pytest.mark.slow  # two interpreters load the whole catalog
def test_a_code_change_leaves_every_plan_current(catalog, tmp_path):
    """The code is not a plan's input: a change in the predictor or the export keeps every seal (a change that changes
    a plan's content bumps PLANNER_VERSION, and --check's recomputed sample catches a forgotten bump)."""
    package = tmp_path / "code/openrecipes"
    shutil.copytree(Path(seal.__file__).parents[1], package, ignore=shutil.ignore_patterns("__pycache__"))
    before = _seals_with_code(package, catalog)
    for path in ("plan/speed.py", "tune/export.py", "engines/torchtitan/flags.py"):
        file = package / path
        file.write_text(file.read_text(encoding="utf-8") + "\nUNUSED = 1  # a code change\n", encoding="utf-8")
    assert _seals_with_code(package, catalog) == before
    (package / "plan/__init__.py").write_text("PLANNER_VERSION = 0\n", encoding="utf-8")
    assert all(seal_ != before[model] for model, seal_ in _seals_with_code(package, catalog).items())


def test_a_bumped_planner_version_makes_every_plan_stale(catalog, monkeypatch):
    assert run_step("plans", catalog, check=True, sample=0).stale is None
    monkeypatch.setattr(seal, "PLANNER_VERSION", seal.PLANNER_VERSION + 1)
    stale = run_step("plans", catalog, check=True, sample=0).stale
    assert stale is not None and "qwen3-8b.json" in stale and "deepseek-v3.json" in stale


def test_a_new_recipe_makes_its_models_plan_stale_and_a_new_heldout_table_every_plan(catalog, monkeypatch):
    """A model's own inputs (its recipes) touch its plan alone; the shared ones (the held-out table, the planner's
    data, the hardware) touch every plan."""
    before = seal.plan_inputs(load_catalog(catalog))
    source = next((catalog / "recipes/qwen3-8b").rglob("*.yaml"))
    shutil.copy(source, source.with_name("copy-" + source.name))
    after = seal.plan_inputs(load_catalog(catalog))
    assert {m for m in before if after[m] != before[m]} == {"qwen3-8b"}
    stale = run_step("plans", catalog, check=True, sample=0).stale
    assert stale == "qwen3-8b.json (edited, or written before its inputs or the planner's version last changed)"
    text = seal.HELDOUT_FILE.read_text(encoding="utf-8")
    monkeypatch.setattr(seal, "data_text", lambda path: text + "x" if path == seal.HELDOUT_FILE else "")
    assert all(inputs != after[m] for m, inputs in seal.plan_inputs(load_catalog(catalog)).items())


def test_an_edited_plan_with_its_seal_made_again_is_caught_by_its_contents(catalog):
    """Someone edits a figure and re-seals the file by hand: the seal matches, the recomputed contents do not."""
    from openrecipes.refresh import content_problems, sampled

    model = "qwen3-0.6b"
    plan = catalog / f"plans/{model}.json"
    text = plan.read_text(encoding="utf-8")
    figure = text.index('"tokens_per_s_per_gpu": ') + len('"tokens_per_s_per_gpu": ')
    loaded = load_catalog(catalog)
    inputs = seal.plan_inputs(loaded)[model]
    plan.write_text(seal.sealed(seal.unsealed(text[:figure] + "9" + text[figure:]), inputs, model), encoding="utf-8")
    assert seal.seal_problem(plan.read_text(encoding="utf-8"), inputs, model) is None  # the seal alone passes
    assert content_problems(loaded, catalog / "plans", [model]) == [model]
    plan.write_text(text, encoding="utf-8")
    assert content_problems(loaded, catalog / "plans", [model]) == []
    seals = seal.plan_inputs(loaded)
    chosen = sampled(seals, sorted(seals), 2)
    assert len(set(chosen)) == 2 and chosen == sampled(seals, sorted(seals), 2)  # the same for the same inputs
    assert sampled(seals, [model], 2) == [model]


def test_the_derived_tables_are_outside_the_package_where_their_readers_look():
    from openrecipes.plan.public_record import SUMMARY_FILE
    from openrecipes.plan.trust import HELDOUT_FILE
    from openrecipes.site.scaling import PREDICTIONS

    assert HELDOUT_FILE == REPO / "derived/heldout.json" and HELDOUT_FILE.is_file()
    assert SUMMARY_FILE == PREDICTIONS == REPO / "derived/public_record.json" and SUMMARY_FILE.is_file()
    assert not list((REPO / "src/openrecipes").rglob("*.json"))  # no generated data inside the package


def test_a_held_out_table_is_computed_again_only_when_its_inputs_moved(tmp_path, monkeypatch):
    """`refresh` keeps a table whose inputs' seal is the stored one and writes it (and its seal) when the seal moved;
    `--check` compares the contents whenever the seal matches, and writes nothing."""
    from openrecipes import refresh

    monkeypatch.setattr(refresh, "_seals_file", lambda: tmp_path / "seals.json")
    table = tmp_path / "heldout.json"
    table.write_text("{}\n", encoding="utf-8")
    writes = []

    def step(inputs: str, check: bool, differs: str | None = None):
        return refresh._derived_table("heldout", table, inputs, check, lambda: differs,
                                      lambda: writes.append(inputs) or table).stale

    assert step("a", check=True) == "its inputs changed since it was written" and writes == []
    assert step("a", check=False) == "its inputs changed since it was written" and writes == ["a"]
    assert step("a", check=False) is None and writes == ["a"]  # kept: not computed again
    assert step("a", check=True) is None
    assert step("a", check=True, differs="its contents differ") == "its contents differ"
    assert step("b", check=False) is not None and writes == ["a", "b"]
