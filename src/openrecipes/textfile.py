"""Reading a file a stranger supplied: regular files only, size-limited, UTF-8, its name printable.

Every recipe, model card, hardware table, rules file, log and CSV is read through here, so a FIFO or a device
never blocks a command, a huge file never fills the memory, and a non-UTF-8 name or content is one clear error.
"""

from __future__ import annotations

import itertools
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path

from openrecipes.errors import UserError

MIB = 2**20
# A log line longer than this is not a training log line (a binary blob, a file that is not a log).
MAX_LINE_BYTES = 1 * MIB
_CHUNK = 1 * MIB


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def shown(path: Path | str) -> str:
    """A path as it can be printed on one line: bytes that are not UTF-8 and control characters as \\xNN."""
    text = os.fsencode(str(path)).decode("utf-8", "backslashreplace")
    return _CONTROL.sub(lambda match: f"\\x{ord(match.group()):02x}", text)


def require_utf8_name(path: Path) -> None:
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        raise UserError(f"{shown(path)}: the file name is not UTF-8; rename the file") from None


def open_regular(path: Path) -> int:
    """A read-only descriptor of `path`, which must be a regular file (a FIFO would block, a device never end)."""
    path = Path(path)
    require_utf8_name(path)
    try:
        # O_NONBLOCK: opening a FIFO with no writer returns at once instead of waiting, so it can be refused.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except (OSError, ValueError) as error:
        reason = getattr(error, "strerror", None) or str(error)
        raise UserError(f"{shown(path)}: cannot read ({reason}); check the path") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise UserError(f"{shown(path)}: not a regular file (a folder, FIFO or device); give a file")
    os.set_blocking(fd, True)
    return fd


def read_bytes(path: Path, max_bytes: int, what: str = "file") -> bytes:
    """The whole file's bytes; over `max_bytes` is a UserError."""
    fd = open_regular(path)
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise UserError(f"{shown(path)}: over {max_bytes / MIB:g} MiB, too large for a {what}; "
                        "give the file itself, not an archive or a dump")
    return data


def read_inside(root: Path, path: Path, max_bytes: int, what: str = "file") -> bytes:
    """The bytes of `path`, a file a catalog names, which must lie under `root` once every link is followed: a
    link out of the catalog (to /dev/zero, to someone's home) is refused before it is opened, and a FIFO or device
    as any file is (open_regular)."""
    try:
        resolved, inside = Path(path).resolve(), Path(root).resolve()
    except (OSError, RuntimeError):  # a link loop on the way
        raise UserError(f"{shown(path)}: a symbolic link loop; remove the looping link") from None
    if not resolved.is_relative_to(inside):
        raise UserError(f"{shown(path)}: leads outside {shown(root)} (to {shown(resolved)}); a {what} is read only "
                        f"from inside {shown(root)}: put the file itself there")
    return read_bytes(resolved, max_bytes, what)


def read_text(path: Path, max_bytes: int, what: str = "file", errors: str = "strict") -> str:
    """The whole file as text; over `max_bytes` or (with errors='strict') not UTF-8 is a UserError."""
    data = read_bytes(path, max_bytes, what)
    try:
        return data.decode("utf-8", errors)
    except UnicodeDecodeError as error:
        line = data[:error.start].count(b"\n") + 1
        raise UserError(f"{shown(path)}:{line}: not UTF-8 text (byte {error.start}); save the file as UTF-8") from None


def iter_lines(path: Path, max_line: int = MAX_LINE_BYTES) -> Iterator[str]:
    """The file's lines (no line ends) read as a stream, in constant memory whatever the file's size; bytes that
    are not UTF-8 (a log cut mid-character) become U+FFFD; a line over `max_line` bytes is a UserError."""
    fd = open_regular(path)
    with os.fdopen(fd, "rb", buffering=_CHUNK) as handle:
        for number, raw in enumerate(iter(lambda: handle.readline(max_line + 1), b""), start=1):
            if len(raw) > max_line and not raw.endswith(b"\n"):
                raise UserError(f"{shown(path)}:{number}: a line over {max_line // MIB} MiB; not a training log "
                                "or CSV line (a binary file?)")
            yield raw.rstrip(b"\r\n").decode("utf-8", "replace")


_JSON_NESTING = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def json_depth(text: str) -> int:
    """How deep JSON brackets nest, strings skipped: checked before parsing, since Python's json recurses (and fails)
    on text nested thousands deep."""
    steps = (1 if token[0] in "[{" else -1 if token[0] in "]}" else 0 for token in _JSON_NESTING.finditer(text))
    return max(itertools.accumulate(steps, initial=0))
