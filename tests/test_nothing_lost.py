"""Nothing a user has is lost: an importer whose stored source lost rows keeps the catalog's entries unless told to
remove them (`--allow-removals`), and writers of one recipe take turns (openrecipes.atomic.locked), so concurrent
`reproduce --write` keep every entry (the race itself, as real processes, is in tests/test_kill_and_race.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

from conftest import REPO

DGXC = "data/record-sources/dgxc-benchmarking"
V2504 = f"{DGXC}/v25.04/llama3.1/README.md.txt"  # its 28 cells are 28 entries of the catalog


def _import_dgxc(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "scripts/import_dgxc_benchmarking.py"), "--root", str(root),
                           *args], capture_output=True, text=True, check=False,
                          env={"PYTHONPATH": os.environ.get("PYTHONPATH", str(REPO / "src"))})


def _entries(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted((root / "recipes").rglob("record-dgxc-*.yaml"))}


def test_a_truncated_dgxc_excerpt_does_not_drop_its_28_entries_unless_allowed(tmp_path):
    root = tmp_path / "catalog"
    for folder in ("models", "hardware", DGXC):
        shutil.copytree(REPO / folder, root / folder)
    for path in (REPO / "recipes").rglob("record-dgxc-*.yaml"):
        (root / path.relative_to(REPO)).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, root / path.relative_to(REPO))
    before = _entries(root)
    excerpt = root / V2504
    kept = excerpt.read_text(encoding="utf-8").splitlines(keepends=True)
    cut = next(i for i, line in enumerate(kept) if "| Llama 3.1 8b BF16 |" in line)  # where the figures begin
    excerpt.write_text("".join(kept[:cut]), "utf-8")
    refused = _import_dgxc(root)
    lines = refused.stderr.splitlines()
    assert refused.returncode == 2 and len(lines) == 1 and refused.stdout == "", refused.stderr
    assert "no longer give 28 entries" in lines[0] and "--allow-removals" in lines[0]
    gone = [name for name in before if "v25.04" in name]
    assert len(gone) == 28 and all(name in lines[0] for name in gone)
    assert _entries(root) == before
    allowed = _import_dgxc(root, "--allow-removals")
    assert allowed.returncode == 0 and allowed.stdout.count("removed recipes/") == 28, allowed.stderr
    assert set(_entries(root)) == set(before) - set(gone)


def test_writers_of_one_file_take_turns_and_leave_no_lock_file(tmp_path):
    from openrecipes.atomic import locked

    recipe = tmp_path / "recipe.yaml"
    recipe.write_text("", encoding="utf-8")
    inside, most = [0], [0]

    def writer() -> None:
        for _ in range(20):
            with locked(recipe):
                inside[0] += 1
                most[0] = max(most[0], inside[0])
                text = recipe.read_text(encoding="utf-8")
                time.sleep(0.001)
                recipe.write_text(text + "x", encoding="utf-8")
                inside[0] -= 1

    threads = [threading.Thread(target=writer) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert most[0] == 1 and recipe.read_text(encoding="utf-8") == "x" * 80
    assert [p.name for p in tmp_path.iterdir()] == ["recipe.yaml"]
