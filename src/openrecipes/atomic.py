"""Writing a file so that a reader never sees half of it: a temporary file beside it, then one rename."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomic(path: Path, data: str | bytes) -> None:
    """Replace `path` with `data` in one step; a crash leaves the old file (or none), never a partial one."""
    path = Path(path)
    mode, encoding = ("wb", None) if isinstance(data, bytes) else ("w", "utf-8")
    with tempfile.NamedTemporaryFile(mode, dir=path.parent, prefix=f".{path.name}.", suffix=".tmp", delete=False,
                                     encoding=encoding) as temp:
        temp.write(data)
    try:
        os.replace(temp.name, path)
    except BaseException:
        os.unlink(temp.name)
        raise
