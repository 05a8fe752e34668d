"""Writing a file so that a reader never sees half of it: a temporary file beside it, then one rename."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomic(path: Path, data: str | bytes, mode: int | None = None) -> None:
    """Replace `path` with `data` in one step; a crash leaves the old file (or none), never a partial one.
    The file keeps the permissions of the one it replaces (a new one gets `mode`, else the umask's default)."""
    path = Path(path)
    if mode is None:
        mode = path.stat().st_mode & 0o777 if path.exists() else 0o666 & ~current_umask()
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
