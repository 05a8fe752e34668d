"""The third adversarial pass's refresh and launch cases: every file `refresh` reads or writes replaced by a link,
a FIFO, a folder or a device, every value of calibration.yaml replaced by one no fit gives, and recipe file names
that would put a run's folder, job name or outputs outside runs/<name>/.

`refresh --check` must fail (exit 1) and `refresh` refuse (exit 2, one line), at once, before any step runs, every
file left as it was; `launch` and `run` refuse a name that is not a plain slug (exit 2) before anything is written.
(An edited plan figure is found by the plans step, which loads the whole catalog: tests/test_refresh_hostile.py.)
"""

from __future__ import annotations

import os
import re
import shutil
import stat
from collections.abc import Callable
from pathlib import Path

import yaml
from cases import _Scratch
from hostile_cases import BAD, STOCK, qwen_catalog
from make_corpus import REPO
from run import Case

PLANNER = REPO / "src/openrecipes/plan"  # read only: each case edits its clone's copy
PLANNER_FILES = ("src/openrecipes/plan/calibration.yaml", "src/openrecipes/plan/reference_points.yaml",
                 "derived/fitted_on.json", "derived/heldout.json", "derived/public_record.json", "derived/seals.json")
CALIBRATION = "src/openrecipes/plan/calibration.yaml"
# What a stranger may write for a number of calibration.yaml: text a YAML 1.1 reader takes for a float, floats
# no fit gives, non-finite ones, and what is not a number at all.
CALIBRATION_TOKENS = ["1e308", "1.0e+308", "-1.0e+308", ".nan", ".inf", "-.inf", "-0.5", "0.0", "0", "-0.0",
                      "1.0e+30", "1.0e-30", "1.0e-300", "true", "'0.5'", "[0.5]", "{a: 1}", "~", "''", "0x10",
                      "9" * 400]
ASSUMED_TOKENS = ["-1.0", ".nan", "1.0e+400", "x", "~", "[]"]
MODES = {"check": (["refresh", "--check"], (1,)), "write": (["refresh"], BAD)}


_PRISTINE: dict[Path, Path] = {}


def _pristine(scratch: _Scratch) -> Path:
    """One copy of plans/ and the package's code per scratch root, that every case's clone links its files to
    (9 MB once, not a case): a case replaces the file it changes, and refresh only ever replaces a file whole (a
    rename), never writes into one."""
    if scratch.root not in _PRISTINE:
        folder = _PRISTINE[scratch.root] = scratch.folder()
        shutil.copytree(REPO / "plans", folder / "plans")
        shutil.copytree(REPO / "derived", folder / "derived")
        shutil.copytree(REPO / "src/openrecipes", folder / "src/openrecipes",
                        ignore=shutil.ignore_patterns("__pycache__"))
    return _PRISTINE[scratch.root]


def _refresh_catalog(scratch: _Scratch) -> Path:
    """What refresh reads before any step: a catalog folder (recipes/, empty) with plans/, derived/ and its own code
    under src/ (so the case's calibration.yaml, not the package's, is the one refresh checks, and would write)."""
    pristine = _pristine(scratch)
    root = scratch.folder()
    (root / "recipes").mkdir()
    for folder in ("plans", "derived", "src"):
        shutil.copytree(pristine / folder, root / folder, copy_function=os.link)
    return root


def _refresh_case(name: str, root: Path, keep: tuple[str, ...]) -> list[Case]:
    cases = []
    for mode, (argv, expect) in MODES.items():
        plans = root / "plans"
        inside = (str(plans / "qwen3-8b.json"),) if plans.is_dir() and not plans.is_symlink() else ()
        kept = (*keep, str(root / CALIBRATION), str(plans), *inside)
        cases.append(Case(f"refresh/{name}-{mode}", "refresh", argv, str(root), expect=expect, keep=kept))
    return cases


def _nodes() -> dict[str, Callable[[Path], object]]:
    """Each node a regular file is replaced by (the device only as root: it is made here, never /dev's own)."""
    makers: dict[str, Callable[[Path], object]] = {
        "fifo": os.mkfifo, "link-to-sibling": lambda p: p.symlink_to(p.with_name(f"{p.stem}.other{p.suffix}")),
        "dangling-link": lambda p: p.symlink_to(p.parent / "nowhere"), "loop": lambda p: p.symlink_to(p),
        "link-to-passwd": lambda p: p.symlink_to("/etc/passwd"), "folder": Path.mkdir}
    if os.geteuid() == 0:
        makers["device"] = lambda p: os.mknod(p, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    return makers


def refresh_node_cases(scratch: _Scratch) -> list[Case]:
    """Every file refresh reads or writes, and plans/ and derived/ themselves, as a link, a FIFO, a folder or a
    device."""
    cases = []
    targets = list(PLANNER_FILES) + [
        f"plans/{path.name}" for path in sorted((REPO / "plans").glob("*.json"))]
    for target in targets:
        for kind, make in _nodes().items():
            root = _refresh_catalog(scratch)
            path = root / target
            shutil.copy(path, path.with_name(f"{path.stem}.other{path.suffix}"))
            path.unlink()
            make(path)
            cases += _refresh_case(f"{target}-{kind}", root, (str(path),))
    for folder in ("plans", "derived"):
        for kind, make in (("link", lambda p: p.symlink_to(p.with_name(f"{p.name}-elsewhere"))),
                           ("file", lambda p: p.write_text("notes\n")), ("fifo", os.mkfifo)):
            root = _refresh_catalog(scratch)
            shutil.move(root / folder, root / f"{folder}-elsewhere")
            make(root / folder)
            cases += _refresh_case(f"{folder}-{kind}", root, (str(root / f"{folder}-elsewhere"),))
    return cases


def _edited(root: Path, line_start: str, token: str, occurrence: int = 0) -> None:
    """calibration.yaml with the `occurrence`-th line starting `line_start` given `token` as its value."""
    path = root / CALIBRATION
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    at = [i for i, line in enumerate(lines) if line.startswith(line_start)][occurrence]
    lines[at] = f"{lines[at].split(':', 1)[0]}: {token}\n"
    path.write_text("".join(lines), encoding="utf-8")


def refresh_calibration_cases(scratch: _Scratch) -> list[Case]:
    """Every fitted value and prior of calibration.yaml, and every assumed one, given a value no fit gives."""
    cases = []
    document = yaml.safe_load((PLANNER / "calibration.yaml").read_text(encoding="utf-8"))
    for index, name in enumerate(document["fitted"]):
        for field, tokens in (("value", CALIBRATION_TOKENS), ("prior", ASSUMED_TOKENS)):
            for token in tokens:
                root = _refresh_catalog(scratch)
                _edited(root, f"    {field}:", token, index)
                cases += _refresh_case(f"calibration-{name}.{field}={token[:20]}", root, ())
    text = (PLANNER / "calibration.yaml").read_text(encoding="utf-8")
    measured_and_assumed = [line.split(":", 1)[0] + ":" for line in text[text.index("\nmeasured:"):].splitlines()
                            if re.fullmatch(r"\s+\w+: [-+0-9.e]+", line)]
    for start in measured_and_assumed:
        for token in ASSUMED_TOKENS:
            root = _refresh_catalog(scratch)
            _edited(root, start, token, -1)  # the last line so named: the one after measured:
            cases += _refresh_case(f"calibration-{start.strip()}={token}", root, ())
    return cases


# Recipe file names (without .yaml) that are not a plain slug: they would name a folder outside runs/, a hidden
# one, an sbatch option, or reach Slurm and the shell as more than one word.
HOSTILE_STEMS = ["..", ".", ".hidden", "-x", "--help", "a..b", "a b", "a\nb", "a\tb", "a\rb", "$(id)", "`id`",
                 "a;b", "a'b", 'a"b', "a%b", "%j", "a*b", "a?b", "[a]", "a\\b", "\u202eab", "\u00e9t\u00e9",
                 "x" * 101, "a:b", "a,b", "a=b", "a@b", "a+b", "~", "~x", "a|b", "a&b", "a>b", "a<b", "a#b", "a!b",
                 "a{b}", "\x7f", "a\x1bb", " lead", "trail ", "_x", "\u00a0", "a\u2028b"]


def launch_name_cases(scratch: _Scratch) -> list[Case]:
    """`launch` (printed, --out, --submit) and `run` of a recipe whose file name is not a plain slug: exit 2, the
    catalog's root and runs/ as they were (no slurm-N.out, no launch.sbatch, no run folder)."""
    root = qwen_catalog(scratch)
    stock = root / STOCK
    cases = []
    for index, stem in enumerate(HOSTILE_STEMS):
        recipe = stock.with_name(f"{stem}.yaml")
        shutil.copy(stock, recipe)
        relative = str(recipe.relative_to(root))
        for how, argv in (("print", ["launch", relative, "--slurm"]),
                          ("submit", ["launch", relative, "--slurm", "--submit"]),
                          ("out", ["launch", relative, "--slurm", "--out", f"job-{index}.sbatch"]),
                          ("run", ["run", relative, "--steps", "1"])):
            command = "run" if how == "run" else "launch"
            cases.append(Case(f"{command}/name-{index}-{how}", command, argv, str(root), expect=BAD,
                              keep=(str(root), str(root / "runs"), str(recipe))))
    return cases


def refresh_launch_cases(scratch: _Scratch) -> list[Case]:
    return refresh_node_cases(scratch) + refresh_calibration_cases(scratch) + launch_name_cases(scratch)
