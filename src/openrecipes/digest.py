"""sha256 of a file, read in blocks: the pins of raw logs, rows files and tokenizers, checked by `audit`."""

from __future__ import annotations

import hashlib
from pathlib import Path

from openrecipes.errors import UserError


def file_sha256(path: Path) -> str:
    try:
        with Path(path).open("rb") as stream:
            return hashlib.file_digest(stream, "sha256").hexdigest()
    except OSError as error:
        raise UserError(f"{path}: cannot read ({error.strerror}); check the path") from None
