"""The output rule (openrecipes.atomic): every command that writes a file or folder, pointed at a FIFO, a device, a
symbolic link, a folder, a stranger's file or a recipe of the catalog, exits 2 with one line and leaves the thing it
was pointed at exactly as it was; a new path, or a file of the command's own kind, is written.

The device is a character device made in the test's own folder (a copy of /dev/null's numbers, root only), so a
broken rule replaces that node, never the machine's /dev/null."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest
from conftest import REPO, openrecipes

QWEN_STOCK = "recipes/qwen3-8b/h200/torchtitan-stock-fsdp2.yaml"
OURS_8B = "recipes/qwen3-8b/h200/openrecipes-fsdp2-compile-noac-mb1.yaml"
RERUN_LOG = "runs/reproductions/qwen3-8b-h200x2-rerun-20261130/ours/train.log"
TINY_CONVERSATIONS = REPO / "tests/fuzz/corpus/conversations/good.jsonl"


@pytest.fixture(scope="module")
def catalog(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("catalog")
    for folder in ("models", "hardware", "recipes/qwen3-8b", "runs/reproductions",
                   "runs/qwen3-8b-h200x2-openrecipes-fsdp2-compile-noac-mb1", "runs/qwen3-8b-h200x2-torchtitan-stock"):
        shutil.copytree(REPO / folder, root / folder)
    return root


def _state(path: Path) -> tuple:
    """What a broken rule would change: the node's type, its device numbers, a link's target, a file's bytes."""
    info = os.lstat(path)
    kind = stat.S_IFMT(info.st_mode)
    if stat.S_ISLNK(info.st_mode):
        return kind, os.readlink(path)
    if stat.S_ISREG(info.st_mode):
        return kind, path.read_bytes()
    if stat.S_ISDIR(info.st_mode):
        return kind, sorted(p.name for p in path.iterdir())
    return kind, info.st_rdev


def _targets(folder: Path, catalog: Path) -> dict[str, Path]:
    """One of each thing an output must never replace, fresh for each command."""
    folder.mkdir(parents=True, exist_ok=True)
    made = {}
    made["fifo"] = folder / "fifo"
    os.mkfifo(made["fifo"])
    victim = folder / "victim.txt"
    victim.write_text("a file the link points at\n", encoding="utf-8")
    made["symlink"] = folder / "link"
    made["symlink"].symlink_to(victim)
    made["dangling symlink"] = folder / "dangling"
    made["dangling symlink"].symlink_to(folder / "nowhere")
    made["folder"] = folder / "a-folder"
    (made["folder"] / "inside").mkdir(parents=True)
    made["stranger's file"] = folder / "notes.txt"
    made["stranger's file"].write_text("someone's notes\n", encoding="utf-8")
    made["catalog recipe"] = catalog / QWEN_STOCK
    if os.geteuid() == 0:
        made["device"] = folder / "null-device"
        os.mknod(made["device"], stat.S_IFCHR | 0o666, os.makedev(1, 3))
    return made


# (command, argv with OUT where the output goes, whether OUT is a folder)
FILE_WRITERS = {
    "plan --emit-recipe": ["plan", "qwen3-8b", "--gpu", "H200", "--gpus", "2", "--emit-recipe", "1", "--out", "OUT"],
    "launch --out": ["launch", REPO / QWEN_STOCK, "--slurm", "--out", "OUT"],
    "tune --out-recipe": ["tune", "qwen3-8b", "--gpu", "H200", "--gpus", "2", "--budget-minutes", "5", "--dry-run",
                          "--out-recipe", "OUT"],
}
FOLDER_WRITERS = {
    "plan export": ["plan", "export", "--out", "OUT"],
    "tokenizer export": ["tokenizer", "export", "qwen3", "--out", "OUT"],
    "site build": ["site", "build", "--out", "OUT", "--catalog", "CATALOG"],
    "rows build": ["rows", "build", "--conversations", TINY_CONVERSATIONS, "--tokenizer", "TOKENIZER",
                   "--chat-format", "qwen3", "--rows", "2", "--row-tokens", "64", "--seed", "1", "--out", "OUT",
                   "--workers", "0"],
    "rows demo": ["rows", "demo", "--out", "OUT", "--rows", "2", "--row-tokens", "64", "--workers", "0"],
}


def _argv(template: list, out: Path, catalog: Path, tokenizer: Path) -> list[str]:
    values = {"OUT": str(out), "CATALOG": str(catalog), "TOKENIZER": str(tokenizer)}
    return [values.get(str(word), str(word)) for word in template]


@pytest.mark.parametrize("command", [*FILE_WRITERS, *FOLDER_WRITERS])
def test_an_output_never_replaces_a_device_fifo_link_folder_or_a_stranger_s_file(command, catalog, tmp_path,
                                                                                  qwen3):
    template = FILE_WRITERS.get(command) or FOLDER_WRITERS[command]
    targets = _targets(tmp_path, catalog)
    for name, target in targets.items():
        if command in FOLDER_WRITERS and name == "folder":
            continue  # a folder is what these write into; one of strangers' files is the "stranger's file" case
        before = _state(target)
        result = openrecipes(*_argv(template, target, catalog, qwen3), cwd=catalog)
        assert result.returncode == 2, f"{command} over a {name}: exit {result.returncode}\n{result.stderr}"
        assert len(result.stderr.strip().splitlines()) == 1 and str(target) in result.stderr, result.stderr
        assert _state(target) == before, f"{command} changed the {name} it was pointed at"
    if "device" not in targets:
        pytest.skip("not root: the device case needs mknod (the other cases ran)")


def test_launch_out_writes_a_new_script_and_replaces_its_own(catalog, tmp_path):
    script = tmp_path / "job.sh"
    argv = ["launch", REPO / QWEN_STOCK, "--slurm", "--out", script]
    assert openrecipes(*argv).returncode == 0 and script.read_text().startswith("#!/bin/bash\n")
    script.write_text(script.read_text() + "# edited\n")
    assert openrecipes(*argv).returncode == 0 and "# edited" not in script.read_text()


def test_launch_out_replaces_its_own_script_in_the_catalog_only_with_force(catalog):
    script = catalog / "runs/job.sh"
    argv = ["launch", REPO / QWEN_STOCK, "--slurm", "--out", script]
    assert openrecipes(*argv).returncode == 0
    refused = openrecipes(*argv)
    assert refused.returncode == 2 and "--force" in refused.stderr
    assert openrecipes(*argv, "--force").returncode == 0


def test_force_never_replaces_a_measured_recipe(catalog):
    recipe = catalog / QWEN_STOCK
    before = recipe.read_bytes()
    for argv in (["launch", REPO / QWEN_STOCK, "--slurm", "--out", recipe, "--force"],
                 ["plan", "qwen3-8b", "--gpu", "H200", "--gpus", "2", "--emit-recipe", "1", "--out", recipe,
                  "--force"]):
        result = openrecipes(*argv, cwd=catalog)
        assert result.returncode == 2 and "not a file this command wrote" in result.stderr, result.stderr
    assert recipe.read_bytes() == before


@pytest.mark.parametrize("args", [("measure", RERUN_LOG, "--recipe", "LINK", "--window", "5", "19", "--write"),
                                  ("reproduce", "LINK", RERUN_LOG, "--write")])
def test_write_never_replaces_a_link_to_the_recipe(args, catalog):
    link = catalog / "recipes/qwen3-8b/h200/link.yaml"
    link.unlink(missing_ok=True)
    link.symlink_to(catalog / OURS_8B)
    before = (catalog / OURS_8B).read_bytes()
    result = openrecipes(*[str(link) if a == "LINK" else catalog / a if a.startswith("runs/") else a for a in args])
    assert result.returncode == 2 and "symbolic link" in result.stderr, result.stderr
    assert link.is_symlink() and (catalog / OURS_8B).read_bytes() == before


def test_write_atomic_refuses_non_regular_targets_for_every_caller(tmp_path):
    from openrecipes.atomic import write_atomic
    from openrecipes.errors import UserError

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "target")
    for target in (fifo, link, tmp_path):
        with pytest.raises(UserError):
            write_atomic(target, "x")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and link.is_symlink() and not (tmp_path / "target").exists()
