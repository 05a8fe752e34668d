"""An output folder's rows.parquet and manifest.json appear together, as one unit, and one build at a time.

A build writes both files into its own staging folder beside them; `rows-current` is the published folder, and
`rows.parquet` and `manifest.json` are links into it. Publishing swaps the staging folder in as `rows-current` in
one step (openrecipes.atomic.publish_folder), so a reader sees the old pair or the new pair, whatever instant the
build is killed at. A lock file held
for the whole build makes a second build into the same folder stop with a message; temporaries a killed build left
behind are removed by the next one.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from openrecipes.atomic import check_output_folder, holds, publish_folder
from openrecipes.errors import UserError

VERSIONS = ".rows-versions"  # where an older layout kept its builds (rows-current was a link into it)
CURRENT = "rows-current"
FILES = ("rows.parquet", "manifest.json")
LOCK = ".rows.lock"
STAGING = ".rows-build-"
TEMPORARY_PREFIXES = (STAGING, f".{CURRENT}.", ".rows.parquet.tmp-", ".conversations.jsonl.")


_held: set[Path] = set()  # folders this process holds: `rows demo` holds its folder around the build it runs


@contextmanager
def locked(out: Path) -> Iterator[None]:
    """Hold the output folder's lock (released by the kernel if the process dies), then clean what a killed
    build left. `out` is new, empty or a rows folder (openrecipes.atomic's rule for folders)."""
    check_output_folder(out, "--out", holds(LOCK, VERSIONS, *FILES))
    key = out.resolve()
    if key in _held:
        yield
        return
    out.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(out / LOCK, os.O_CREAT | os.O_RDWR, 0o644)
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UserError(f"{out}: another rows build is writing this folder; wait for it to finish or pass "
                            "another --out") from None
        _remove_leftovers(out)
        _held.add(key)
        yield
    finally:
        _held.discard(key)
        os.close(descriptor)


def stage(out: Path) -> Path:
    """A new, empty folder for one build's rows.parquet and manifest.json."""
    folder = out / f"{STAGING}{uuid.uuid4().hex}"
    folder.mkdir()
    return folder


def publish(out: Path, staged: Path) -> None:
    """Make the staged pair the folder's rows.parquet and manifest.json in one step."""
    _adopt_plain_files(out)
    for name in FILES:  # links into rows-current; before the first publish they point at nothing yet
        _link(out / name, os.path.join(CURRENT, name))
    publish_folder(staged, out / CURRENT)
    _remove_leftovers(out)


def _link(path: Path, target: str) -> None:
    """Point the link `path` at `target` in one rename (a new link beside it, renamed over it)."""
    if path.is_symlink() and os.readlink(path) == target:
        return
    temporary = path.with_name(f".{CURRENT}.{uuid.uuid4().hex}.tmp")
    os.symlink(target, temporary)
    os.replace(temporary, path)


def _adopt_plain_files(out: Path) -> None:
    """rows.parquet + manifest.json as plain files (an older build) become rows-current first, each step showing the
    same pair, so that the switch below stays a single step."""
    plain = [name for name in FILES if (out / name).exists() and not (out / name).is_symlink()]
    if not plain:
        return
    adopted = stage(out)
    for name in plain:
        os.link(out / name, adopted / name)
    publish_folder(adopted, out / CURRENT)
    for name in plain:
        _link(out / name, os.path.join(CURRENT, name))


def _remove_leftovers(out: Path) -> None:
    """Staging folders and temporaries of killed builds (among them the old pair a kill right after the swap left),
    and an older layout's versions."""
    if not (out / CURRENT).is_symlink():  # the older layout's link is replaced at the next publish
        shutil.rmtree(out / VERSIONS, ignore_errors=True)
    for path in out.iterdir():
        if path.name.startswith(TEMPORARY_PREFIXES):
            shutil.rmtree(path, ignore_errors=True) if path.is_dir() and not path.is_symlink() else path.unlink()
