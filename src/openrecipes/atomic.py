"""Writing a file so that a reader never sees half of it (a temporary file beside it, then one rename), and the one
rule for what a command may write over.

The rule, for every `--out` and `--write`: a new regular file, or a regular file of the command's own kind
(recognised by its first bytes), replaced in one rename. Never a symbolic link (its target would be left and the
link replaced), a device, a FIFO, a socket or a folder (the rename would put a file where the node was), never a
file the command did not write, and never one of the catalog's recipes or runs unless `--force` is given for a
file of the command's own kind. Folders (`rows build --out`, `tokenizer export --out`, `plan export --out`) follow
the same rule one level up: a new folder, an empty one, or one the command filled before.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path

from openrecipes.errors import UserError

Ours = Callable[[Path], bool]  # does this existing regular file (or folder) hold what the command writes?


def starts_with(*headers: str | bytes) -> Ours:
    """Recognise our own files by their first bytes (a header comment, a shebang and banner, a JSON key)."""
    encoded = [h.encode() if isinstance(h, str) else h for h in headers]

    def ours(path: Path) -> bool:
        with open(path, "rb") as file:
            head = file.read(max(map(len, encoded)))
        return any(head.startswith(h) for h in encoded)

    return ours


def holds(*names: str) -> Ours:
    """Recognise our own folders by a file the command always leaves in them."""
    return lambda folder: any(os.path.lexists(folder / name) for name in names)


def node_kind(mode: int) -> str | None:
    """What a non-regular node is, in words; None for a regular file."""
    for test, kind in ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISDIR, "a folder"), (stat.S_ISCHR, "a device"),
                       (stat.S_ISBLK, "a device"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return kind
    return None


def _catalog_entry(path: Path) -> str | None:
    """'recipe' or 'run' when `path` lies in a catalog's recipes/ or runs/ (a folder beside a recipes/ folder)."""
    for folder in Path(os.path.abspath(path)).parents:
        if folder.name in ("recipes", "runs") and (folder.parent / "recipes").is_dir():
            return folder.name[:-1]
    return None


def check_output(path: Path, option: str, ours: Ours | None, force: bool = False) -> None:
    """Refuse `path` as the output of `option` unless it is new or a regular file of the command's own kind.
    `ours=None`: only a new file. A recipe or run of the catalog is replaced only with `force`."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    kind = node_kind(mode)
    if kind is not None:
        raise UserError(f"{path}: {option} is {kind}, not a regular file; give the path of a new file "
                        "(nothing is ever written through a link or over a device, FIFO or folder)")
    if ours is None or not ours(path):
        raise UserError(f"{path}: {option} exists and is not a file this command wrote; give a new path, or move "
                        "the file away first")
    entry = _catalog_entry(path)
    if entry is not None and not force:
        raise UserError(f"{path}: {option} is an existing {entry} of the catalog; give a new path, or pass --force "
                        "to replace it")


def check_output_folder(folder: Path, option: str, ours: Ours) -> None:
    """Refuse `folder` unless it is new, an empty folder, or a folder this command filled before."""
    try:
        mode = os.lstat(folder).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(mode):
        raise UserError(f"{folder}: {option} is {node_kind(mode) or 'a file'}, not a folder; give a new folder")
    if any(folder.iterdir()) and not ours(folder):
        raise UserError(f"{folder}: {option} is a folder holding files this command did not write; give a new or "
                        "empty folder")


def check_regular(path: Path, option: str) -> None:
    """A file updated in place (`measure --write`, `reproduce --write`) must be a regular file, not a link."""
    kind = node_kind(os.lstat(path).st_mode)
    if kind is not None:
        raise UserError(f"{path}: {option} updates a recipe file, and this is {kind}; give the recipe's own path")


def write_output(path: Path, data: str | bytes, option: str, ours: Ours | None, *, force: bool = False,
                 mode: int | None = None) -> None:
    """The output rule, then one atomic replace."""
    check_output(path, option, ours, force)
    write_atomic(path, data, mode)


def write_atomic(path: Path, data: str | bytes, mode: int | None = None) -> None:
    """Replace `path` with `data` in one step; a crash leaves the old file (or none), never a partial one.
    The file keeps the permissions of the one it replaces (a new one gets `mode`, else the umask's default).
    Whatever the caller, only a regular file is ever replaced: a link, device, FIFO or folder is refused."""
    path = Path(path)
    try:
        current = os.lstat(path).st_mode
    except FileNotFoundError:
        current = None
    if current is not None and node_kind(current) is not None:
        raise UserError(f"{path}: is {node_kind(current)}, not a regular file; it was left as it is")
    if mode is None:
        mode = current & 0o777 if current is not None else 0o666 & ~current_umask()
    open_mode, encoding = ("wb", None) if isinstance(data, bytes) else ("w", "utf-8")
    with tempfile.NamedTemporaryFile(open_mode, dir=path.parent, prefix=f".{path.name}.", suffix=".tmp",
                                     delete=False, encoding=encoding) as temp:
        temp.write(data)
    try:
        os.chmod(temp.name, mode)  # the temporary file was created private
        os.replace(temp.name, path)
    except BaseException:
        os.unlink(temp.name)
        raise


def current_umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current
