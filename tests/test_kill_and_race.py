"""`measure --write`, `reproduce --write`, `record`, `plan export`, `launch --out` and `site build` killed with SIGKILL
at random moments and at the instant of their final rename or swap, two `site build`s into one folder at once and
two `reproduce --write` of one recipe at once: every output file is always its old complete state or the new
complete one (or absent, for a new file), and no writer's update is lost.

Every test here starts real processes and kills them (the process boundary is the point), so all are `slow`: they
run in CI and with `-m slow`, not in the quick loop. Each command is killed 10 times (first at the swap points, then
at random moments) and 10 pairs of builds race.
"""

from __future__ import annotations

import datetime
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import GPTOSS_1, REPO, built_once
from test_audit_reproduce_record import another_run

STOP_AT = REPO / "tests/kill/stop_at.py"
SLIME_LOG = REPO / "tests/fixtures/logs/slime-gpt-oss-20b-attune-tp1-pp1-ep4.log"
ENV = {**os.environ, "PYTHONPATH": str(REPO / "src"), "OPENBLAS_NUM_THREADS": "1"}


def _start(args: list[str], stop_at: tuple[str, str] | None = None) -> subprocess.Popen:
    launcher = [str(STOP_AT), *stop_at] if stop_at else ["-m", "openrecipes"]
    return subprocess.Popen([sys.executable, *launcher, *args], env=ENV, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)


def _wait_stopped(process: subprocess.Popen, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        state = Path(f"/proc/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        if state == "T":
            return
        assert process.poll() is None, f"ended before the stop point: {process.stderr.read()}"
        time.sleep(0.02)
    raise AssertionError("never reached the stop point")


def _kill(args: list[str], stop_at: tuple[str, str] | None, within: float, rng: random.Random) -> None:
    """Run `openrecipes ARGS` and SIGKILL it at its stop point, or else at a random moment within `within` s."""
    process = _start(args, stop_at)
    if stop_at:
        _wait_stopped(process)
    else:
        time.sleep(rng.uniform(0, within))
    process.send_signal(signal.SIGKILL)
    process.wait()


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()} if folder.exists() \
        else {}


# --- measure --write -----------------------------------------------------------------------------------------

def _stale_recipe(tmp_path: Path) -> tuple[Path, str, str]:
    new = GPTOSS_1.read_text(encoding="utf-8")
    old = new.replace("tokens_per_s_per_gpu: 10483.91", "tokens_per_s_per_gpu: 9000.5")
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(old, encoding="utf-8")
    return recipe, old, new


def _measure_write(recipe: Path) -> list[str]:
    return ["measure", str(SLIME_LOG), "--recipe", str(recipe), "--window", "5", "19", "--write"]


def _kill_measure_write(tmp_path: Path, kills: int, seed: int) -> list[str]:
    recipe, old, new = _stale_recipe(tmp_path)
    started = time.monotonic()
    assert subprocess.run([sys.executable, "-m", "openrecipes", *_measure_write(recipe)], env=ENV).returncode == 0
    duration = time.monotonic() - started
    assert recipe.read_text(encoding="utf-8") == new
    rng, states = random.Random(seed), []
    for i in range(kills):
        recipe.write_text(old, encoding="utf-8")
        _kill(_measure_write(recipe), [("os.replace", "before"), ("os.replace", "after")][i] if i < 2 else None,
              duration, rng)
        text = recipe.read_text(encoding="utf-8")
        assert text in (old, new), f"kill {i}: the recipe is neither the old nor the new text"
        states.append("new" if text == new else "old")
    if kills >= 2:  # killed right before the rename: old; right after it: new
        assert states[:2] == ["old", "new"]
    return states


@pytest.mark.slow
def test_measure_write_killed_leaves_the_old_or_the_new_recipe(tmp_path):
    _kill_measure_write(tmp_path, kills=10, seed=2)


# --- site build ----------------------------------------------------------------------------------------------

def _catalog(root: Path, highlights: str) -> Path:
    recipes = root / "recipes/gpt-oss-20b/h200"
    recipes.mkdir(parents=True)
    text = GPTOSS_1.read_text(encoding="utf-8").replace("highlights: no recompute", f"highlights: {highlights}")
    (recipes / GPTOSS_1.name).write_text(text, encoding="utf-8")
    for folder in ("models", "hardware"):
        shutil.copytree(REPO / folder, root / folder)
    return root


@pytest.fixture(scope="session")
def two_sites(tmp_path_factory, worker_id):
    """Catalogs A and B (one recipe's text differs), the sites each builds, as {path: bytes}, the longer build's
    seconds and site A's folder: built once, for both tests on whichever pytest-xdist worker runs them."""
    return built_once(tmp_path_factory, worker_id, "two-sites", _two_sites)


def _two_sites(base: Path) -> tuple[dict[str, Path], dict[str, dict[str, bytes]], float, Path]:
    catalogs = {name: _catalog(base / name, f"no recompute ({name})") for name in ("a", "b")}
    sites, seconds = {}, []
    for name, catalog in catalogs.items():
        started = time.monotonic()
        subprocess.run([sys.executable, "-m", "openrecipes", *_build_args(catalog, base / f"site-{name}")], env=ENV,
                       check=True, capture_output=True)
        seconds.append(time.monotonic() - started)
        sites[name] = _snapshot(base / f"site-{name}")
    assert sites["a"] != sites["b"]
    return catalogs, sites, max(seconds), base / "site-a"


def _build_args(catalog: Path, out: Path) -> list[str]:
    return ["site", "build", "--out", str(out), "--catalog", str(catalog)]


def _assert_whole(out: Path, sites: dict) -> str:
    found = _snapshot(out)
    state = next((name for name, site in sites.items() if found == site), None)
    assert state, f"{out}: {len(found)} files, neither site a ({len(sites['a'])}) nor site b ({len(sites['b'])})"
    return state


SWAP_POINTS = [("openrecipes.atomic.swap_folders", "before"), ("openrecipes.atomic.swap_folders", "after"),
               ("openrecipes.site.build._build_into", "after")]


def _kill_site_builds(tmp_path: Path, two_sites, kills: int, seed: int) -> list[str]:
    catalogs, sites, duration, site_a = two_sites
    out, rng, states = tmp_path / "site", random.Random(seed), []
    for i in range(kills):
        shutil.rmtree(out, ignore_errors=True)
        shutil.copytree(site_a, out)  # site a as its build left it (the files and the build's marker), not rebuilt
        _kill(_build_args(catalogs["b"], out), SWAP_POINTS[i] if i < len(SWAP_POINTS) else None, duration, rng)
        states.append(_assert_whole(out, sites))
    if kills >= 2:  # right before the exchange the old site stands, right after it the new one
        assert states[:2] == ["a", "b"]
    # A build after the kills removes what they left beside the folder.
    subprocess.run([sys.executable, "-m", "openrecipes", *_build_args(catalogs["b"], out)], env=ENV, check=True,
                   capture_output=True)
    assert _assert_whole(out, sites) == "b"
    assert [p.name for p in tmp_path.iterdir()] in (["site", ".site.lock"], [".site.lock", "site"])
    return states


def _concurrent_builds(tmp_path: Path, two_sites, pairs: int) -> list[str]:
    catalogs, sites, _, _ = two_sites
    out, states = tmp_path / "site", []
    for _ in range(pairs):
        first, second = _start(_build_args(catalogs["a"], out)), _start(_build_args(catalogs["b"], out))
        assert first.wait() == 0 and second.wait() == 0, first.stderr.read() + second.stderr.read()
        states.append(_assert_whole(out, sites))
    assert not list(tmp_path.glob(".site.building*"))
    return states


@pytest.mark.slow
def test_site_build_killed_leaves_the_old_or_the_new_site(tmp_path, two_sites):
    _kill_site_builds(tmp_path, two_sites, kills=10, seed=4)


@pytest.mark.slow
def test_concurrent_site_builds_leave_one_whole_site(tmp_path, two_sites):
    _concurrent_builds(tmp_path, two_sites, pairs=10)


# --- reproduce --write, record, plan export, launch --out ------------------------------------------------------

QWEN_OURS = "recipes/qwen3-8b/h200/openrecipes-fsdp2-compile-noac-mb1.yaml"
QWEN_STOCK = "recipes/qwen3-8b/h200/torchtitan-stock-fsdp2.yaml"
QWEN_RERUN = "runs/reproductions/qwen3-8b-h200x2-rerun-20261130"
WRITE_POINTS = [("os.replace", "before"), ("os.replace", "after")]


def _qwen_catalog(root: Path) -> Path:
    for folder in ("models", "hardware", "recipes/qwen3-8b", "runs/qwen3-8b-h200x2-openrecipes-fsdp2-compile-noac-mb1",
                   "runs/qwen3-8b-h200x2-torchtitan-stock", "runs/reproductions"):
        shutil.copytree(REPO / folder, root / folder)
    return root


def _kill_writer(args: list[str], outputs: list[Path], reset, kills: int, seed: int, cwd: Path) -> list[str]:
    """Run `openrecipes ARGS` whole once (the new state of `outputs`), then `kills` times from the old state
    (`reset()`), SIGKILLed at the rename points first, then at random: each output is its old or its new bytes."""
    def state() -> list[bytes | None]:
        return [path.read_bytes() if path.exists() else None for path in outputs]

    reset()
    old = state()
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "openrecipes", *args], env=ENV, cwd=cwd, capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    duration, new = time.monotonic() - started, state()
    assert new != old
    rng, seen = random.Random(seed), []
    for i in range(kills):
        reset()
        point = WRITE_POINTS[i] if i < len(WRITE_POINTS) else None
        launcher = [str(STOP_AT), *point] if point else ["-m", "openrecipes"]
        process = subprocess.Popen([sys.executable, *launcher, *args], env=ENV, cwd=cwd, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, text=True)
        if point:
            _wait_stopped(process)
        else:
            time.sleep(rng.uniform(0, duration))
        process.send_signal(signal.SIGKILL)
        process.wait()
        now = state()
        for path, before, after, found in zip(outputs, old, new, now, strict=True):
            assert found in (before, after), f"kill {i}: {path} is neither its old nor its new content"
        seen.append("new" if now == new else "old" if now == old else "some new")
    if kills >= 2:  # right before the first rename nothing is new; right after it, something is
        assert seen[0] == "old" and seen[1] != "old", seen
    return seen


@pytest.mark.slow
def test_reproduce_write_killed_leaves_the_old_or_the_new_recipe(tmp_path):
    catalog = _qwen_catalog(tmp_path / "catalog")
    recipe, text = catalog / QWEN_OURS, (catalog / QWEN_OURS).read_bytes()
    log = another_run(catalog / QWEN_RERUN / "ours/train.log", catalog / "runs/reproductions/mine/train.log")
    _kill_writer(["reproduce", QWEN_OURS, str(log.relative_to(catalog)), "--write", "--by", "a tester"], [recipe],
                 lambda: recipe.write_bytes(text), kills=4, seed=5, cwd=catalog)


@pytest.mark.slow
def test_record_killed_leaves_no_recipe_or_the_whole_one(tmp_path):
    catalog = _qwen_catalog(tmp_path / "catalog")
    run = catalog / "runs/my-run"
    shutil.copytree(catalog / QWEN_RERUN / "stock", run)
    (run / "command.sh").write_text(_stock_run() + " \\\n    --parallelism.fsdp_reshard_after_forward never\n")
    written = catalog / "recipes/qwen3-8b/h200/killed.yaml"
    _kill_writer(["record", "runs/my-run", "--like", QWEN_STOCK, "--name", "killed"], [written],
                 lambda: written.unlink(missing_ok=True), kills=4, seed=6, cwd=catalog)


def _stock_run() -> str:
    from openrecipes.catalog.store import load_recipe

    return load_recipe(REPO / QWEN_STOCK).run.rstrip("\n")


@pytest.mark.slow
def test_plan_export_killed_leaves_each_plan_old_or_new(tmp_path):
    catalog = _qwen_catalog(tmp_path / "catalog")
    plans = catalog / "plans"
    plans.mkdir()
    stale = b'{\n "fingerprint": "stale"\n}\n'
    _kill_writer(["plan", "export", "--out", "plans"], [plans / "qwen3-8b.json"],
                 lambda: (plans / "qwen3-8b.json").write_bytes(stale), kills=4, seed=7, cwd=catalog)


@pytest.mark.slow
def test_launch_out_killed_leaves_the_old_or_the_new_script(tmp_path):
    script = tmp_path / "job.sh"
    old = "#!/bin/bash\n#SBATCH --job-name=old\n"
    _kill_writer(["launch", str(REPO / QWEN_STOCK), "--slurm", "--out", str(script)], [script],
                 lambda: script.write_text(old), kills=4, seed=8, cwd=tmp_path)


# --- two reproduce --write of one recipe at once ----------------------------------------------------------------

STAMP = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3}")


def _concurrent_reproductions(tmp_path: Path, trials: int) -> list[int]:
    """Two `reproduce --write` of one recipe at once, `trials` times from the same recipe; in every other trial the
    first is stopped right before it replaces the recipe while the second runs, the others start together. Each time
    the recipe ends with both entries (the writers take turns on the recipe's lock), and no lock file is left."""
    catalog = _qwen_catalog(tmp_path / "catalog")
    recipe, text = catalog / QWEN_OURS, (catalog / QWEN_OURS).read_bytes()
    first = another_run(catalog / QWEN_RERUN / "ours/train.log", catalog / "runs/reproductions/first/train.log")
    second = catalog / "runs/reproductions/second/train.log"  # another run again: its lines 3 ms further apart
    second.parent.mkdir(parents=True)
    shape, lines = "%Y-%m-%d %H:%M:%S,%f", first.read_text(encoding="utf-8")
    stamps = iter(datetime.datetime.strptime(stamp, shape) + datetime.timedelta(hours=1, milliseconds=3 * i)
                  for i, stamp in enumerate(STAMP.findall(lines)))
    second.write_text(STAMP.sub(lambda _: next(stamps).strftime(shape)[:-3], lines), encoding="utf-8")
    counts = []
    for trial in range(trials):
        recipe.write_bytes(text)
        stop = ("openrecipes.audit.reproduce.write_atomic", "before") if trial % 2 == 0 else None
        waited = tmp_path / f"stderr-{trial}"
        runs = []
        for i, log in enumerate((first, second)):
            launcher = [str(STOP_AT), *stop] if stop and i == 0 else ["-m", "openrecipes"]
            with open(waited if i else os.devnull, "w") as stderr:
                runs.append(subprocess.Popen([sys.executable, *launcher, "reproduce", QWEN_OURS,
                                              str(log.relative_to(catalog)), "--write", "--by", f"tester {i}"],
                                             env=ENV, cwd=catalog, stdout=subprocess.DEVNULL, stderr=stderr))
            if stop and i == 0:
                _wait_stopped(runs[0])
        if stop:  # the second runs to its end, or to the first's lock, while the first stands before its write
            deadline = time.monotonic() + 120
            while runs[1].poll() is None and "waiting for" not in waited.read_text() and time.monotonic() < deadline:
                time.sleep(0.05)
            runs[0].send_signal(signal.SIGCONT)
        for run in runs:
            assert run.wait() == 0, waited.read_text()
        written = recipe.read_text(encoding="utf-8")
        counts.append(sum(f"by: tester {i}" in written for i in range(2)))
        assert not list(recipe.parent.glob(".*.lock"))
    return counts


@pytest.mark.slow
def test_concurrent_reproduce_writes_keep_both_entries(tmp_path):
    assert _concurrent_reproductions(tmp_path, trials=8) == [2] * 8


def _openrecipes(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "openrecipes", *args], env=ENV, cwd=cwd, capture_output=True,
                          text=True)


@pytest.mark.slow
def test_model_add_killed_leaves_a_whole_pair_or_one_every_command_refuses(tmp_path):
    """A kill between `model add`'s two renames leaves the new config beside the old card; no command reads that
    card (its config.sha256 is not its config's), and deriving it again makes a whole pair."""
    catalog = tmp_path / "catalog"
    for folder in ("models", "hardware"):
        shutil.copytree(REPO / folder, catalog / folder)
    (catalog / "recipes").mkdir()
    card, config = catalog / "models/my-model.yaml", catalog / "models/configs/my-model.json"
    changed = tmp_path / "config.json"  # the same model, another file: a new sha256, so both files change
    changed.write_text((REPO / "models/configs/mixtral-8x7b.json").read_text() + "\n")
    old_args = ["model", "add", str(REPO / "models/configs/mixtral-8x7b.json"), "--name", "my-model"]
    new_args = ["model", "add", str(changed), "--name", "my-model"]
    assert _openrecipes(old_args, catalog).returncode == 0
    old = (card.read_bytes(), config.read_bytes())
    assert _openrecipes(new_args, catalog).returncode == 0
    new = (card.read_bytes(), config.read_bytes())
    rng, seen = random.Random(9), []
    for i in range(6):
        card.write_bytes(old[0])
        config.write_bytes(old[1])
        point = WRITE_POINTS[i] if i < len(WRITE_POINTS) else None
        launcher = [str(STOP_AT), *point] if point else ["-m", "openrecipes"]
        process = subprocess.Popen([sys.executable, *launcher, *new_args], env=ENV, cwd=catalog,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if point:
            _wait_stopped(process)
        else:
            time.sleep(rng.uniform(0, 6))
        process.send_signal(signal.SIGKILL)
        process.wait()
        now = (card.read_bytes(), config.read_bytes())
        assert now[0] in (old[0], new[0]) and now[1] in (old[1], new[1]), f"kill {i}: a file is half written"
        if now not in (old, new):
            refused = _openrecipes(["validate", "--catalog", str(catalog)], catalog)
            assert refused.returncode == 2 and "my-model.yaml" in refused.stderr, refused.stderr
            assert "config.sha256" in refused.stderr and refused.stderr.count("\n") == 1
            assert _openrecipes(new_args, catalog).returncode == 0
            assert (card.read_bytes(), config.read_bytes()) == new
        seen.append("new" if now == new else "old" if now == old else "half")
    assert seen[0] == "old" and seen[1] == "half", seen  # stopped before the first rename, then right after it
