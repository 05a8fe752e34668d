"""sha256 pins of raw logs: a recipe names the digest of each log it was measured from, so a swapped or edited log
is caught by `openrecipes audit`."""

from __future__ import annotations

import hashlib
from pathlib import Path

from openrecipes.catalog.paths import RUN_LOG
from openrecipes.errors import UserError

LOG_NAME = RUN_LOG  # the raw log in each runs/ folder
COMMAND_NAME = "command.sh"  # the run's exact command, beside its log (`tune` and `record` write it)


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    try:
        with Path(path).open("rb") as stream:
            for block in iter(lambda: stream.read(1 << 20), b""):
                digest.update(block)
    except OSError as error:
        raise UserError(f"{path}: cannot read ({error.strerror}); check the path") from None
    return digest.hexdigest()
