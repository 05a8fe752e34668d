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

import ctypes
import errno
import fcntl
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
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


def lstat_mode(path: Path) -> int | None:
    """The mode of the node at `path` itself (a link is not followed); None where there is none."""
    try:
        return os.lstat(path).st_mode
    except FileNotFoundError:
        return None


def node_kind(mode: int) -> str | None:
    """What a non-regular node is, in words; None for a regular file."""
    return next((kind for test, kind in ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISDIR, "a folder"),
                                         (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device"),
                                         (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket")) if test(mode)), None)


def _catalog_entry(path: Path) -> str | None:
    """'recipe' or 'run' when `path` lies in a catalog's recipes/ or runs/ (a folder beside a recipes/ folder)."""
    return next((folder.name[:-1] for folder in Path(os.path.abspath(path)).parents
                 if folder.name in ("recipes", "runs") and (folder.parent / "recipes").is_dir()), None)


def check_output(path: Path, option: str, ours: Ours | None, force: bool = False) -> None:
    """Refuse `path` as the output of `option` unless it is new or a regular file of the command's own kind.
    `ours=None`: only a new file. A recipe or run of the catalog is replaced only with `force`."""
    if (mode := lstat_mode(path)) is None:
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
    if (mode := lstat_mode(folder)) is None:
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


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold the lock of the file `path` while the caller reads, changes and replaces it, so that writers of one file
    (two `reproduce --write` of one recipe) take turns and neither loses the other's update. The lock is a file
    `.NAME.lock` beside it, held with flock (the kernel releases it when a holder dies) and removed on release; a
    writer that waited on a lock file its holder removed takes the new one, so two never hold the lock at once."""
    lock = path.with_name(f".{path.name}.lock")
    while True:
        try:
            descriptor = os.open(lock, os.O_CREAT | os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644)
        except OSError as error:
            raise UserError(f"{lock}: the lock beside the file cannot be taken ({error.strerror}); remove it if it is "
                            "not a file, or check the folder's permissions") from None
        try:
            if not stat.S_ISREG(os.fstat(descriptor).st_mode):
                raise UserError(f"{lock}: the lock beside the file is not a regular file; remove it")
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                print(f"waiting for another command writing {path} to finish", file=sys.stderr)
                fcntl.flock(descriptor, fcntl.LOCK_EX)
            if _names(lock, descriptor):
                break
        except BaseException:
            os.close(descriptor)
            raise
        os.close(descriptor)  # its holder removed it while this one waited: take the lock file there now
    try:
        yield
    finally:
        Path(lock).unlink(missing_ok=True)
        os.close(descriptor)


def _names(path: Path, descriptor: int) -> bool:
    """Whether `path` still names the open file `descriptor`."""
    try:
        here = os.lstat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(descriptor)
    return (here.st_dev, here.st_ino) == (held.st_dev, held.st_ino)


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
    current = lstat_mode(path)
    if current is not None and (kind := node_kind(current)) is not None:
        raise UserError(f"{path}: is {kind}, not a regular file; it was left as it is")
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


def copy_folder(source: Path, target: Path) -> None:
    """A copy of the folder `source` at the new path `target`: its folders, regular files (with their permissions)
    and symbolic links (as links, never followed). Anything else in it (a FIFO, a device, a socket) is a UserError,
    since reading one could block forever or never end."""
    for folder, names, files in os.walk(source, onerror=_unreadable):
        here = Path(folder)
        into = target / here.relative_to(source)
        into.mkdir(mode=os.lstat(here).st_mode & 0o777)
        for name in sorted(files + [n for n in names if (here / n).is_symlink()]):
            path = here / name
            mode = os.lstat(path).st_mode
            if stat.S_ISLNK(mode):
                os.symlink(os.readlink(path), into / name)
            elif stat.S_ISREG(mode):
                shutil.copy2(path, into / name)
            else:
                raise UserError(f"{path}: is {node_kind(mode)}, not a file or folder; remove it from {source}")


def _unreadable(error: OSError) -> None:
    raise error  # a folder the copy cannot list would be left out of it


def publish_folder(staged: Path, target: Path) -> None:
    """Put the finished folder `staged` at `target` in one step, then remove what stood there (a folder, or a link
    an older layout left): a reader of `target` sees the whole old tree or the whole new one, never a mix. Both lie
    on one file system. A crash after the swap leaves the old tree at `staged`, for the caller's next run to remove
    (callers name their staging folders so that they recognise it)."""
    if not os.path.lexists(target):
        os.rename(staged, target)
        return
    swap_folders(staged, target)
    if os.path.islink(staged):
        os.unlink(staged)
    else:
        shutil.rmtree(staged)


def swap_folders(new: Path, old: Path) -> None:
    """Put the folder `new` at `old` in one step, and `old`'s tree at `new`. Linux exchanges them in one rename
    (renameat2 RENAME_EXCHANGE); where the kernel or file system cannot, three renames do it, and a crash between
    them leaves `old` missing with both trees whole beside it (`new` and `new.old`, never a partial one)."""
    if _exchange(new, old):
        return
    aside = new.with_name(f"{new.name}.old")
    os.rename(old, aside)
    os.rename(new, old)
    os.rename(aside, new)


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths in one atomic step (Linux renameat2); False where the system cannot."""
    renameat2 = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)
    if renameat2 is None:
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), str(b))


_AT_FDCWD = -100  # renameat2: paths relative to the working directory
_RENAME_EXCHANGE = 2


def write_all_or_none(files: list[tuple[Path, str]]) -> None:
    """Write each (path, text) in order, each in one rename (write_atomic), as one publish: when one fails, those
    written before it get their earlier bytes back (or are removed where they were new), and folders made for them
    are removed, so the files are all new or all as they were. A file that already holds its text is left as is."""
    done: list[tuple[Path, bytes | None]] = []
    made: list[Path] = []
    try:
        for path, text in files:
            missing = [folder for folder in (path.parent, *path.parent.parents) if not os.path.lexists(folder)]
            for folder in reversed(missing):
                folder.mkdir()
                made.append(folder)
            before = path.read_bytes() if os.path.lexists(path) else None
            if before != text.encode("utf-8"):
                write_atomic(path, text)
                done.append((path, before))
    except BaseException:
        for path, before in reversed(done):
            if before is None:
                path.unlink(missing_ok=True)
            else:
                write_atomic(path, before)
        for folder in reversed(made):
            folder.rmdir()
        raise
