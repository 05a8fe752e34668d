"""What a contributed training log or loss curve must be before `measure`, `reproduce` or `record` accept it as
evidence: a training log from its first line to its last, not a document of another kind with step lines inside.

A log is shipped with the site and read by people, so a page or a script that merely holds step lines (in a comment,
say) must not pass for one. The rules, each checked over the whole file in one streamed pass:
- text: at most MAX_LOG_BYTES, UTF-8 (a last character cut off by a killed run is allowed), no NUL and no control
  character but tab, line ends and terminal colour codes;
- no markup: no closing tag, comment, declaration or processing instruction (`</x`, `<!`, `<?`), no tag with an
  attribute (`<x a=`) and no tag left open at the end of its line. A log's own `<module>`, `<lambda>` or
  `<frozen runpy>` (Python's names for code) stays allowed: a tag without attributes runs nothing;
- no script comment: no line starting with `/*`, `*/`, `//` or `-->`, none opening or closing a block comment at its
  end (`x; /*`, `... */`);
- every step line starts with the log's own prefix (timestamps, `[rank0]:`, `[titan]`, a logger's name and level),
  not with other text before it (`// `, `# `, a quote). A JSON-lines row is a whole line by its reader.
"""

from __future__ import annotations

import codecs
import os
import re
from pathlib import Path

from openrecipes.errors import UserError
from openrecipes.measure.formats import step_line_patterns, strip_colour
from openrecipes.textfile import MAX_LINE_BYTES, MIB, open_regular, shown
from openrecipes.thresholds import MAX_LOG_BYTES

_CHUNK_BYTES = 4 * MIB
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f]")  # tab, LF, CR and ESC (colour codes) allowed
_MARKUP = re.compile(r"</[A-Za-z]|<[!?]|<[A-Za-z][^<>\n]*?[\s/][^\s<>=/]+[ \t]*=|<[A-Za-z][^<>\n]*$", re.M)
_COMMENT_MARK = re.compile(r"/[*/]|\*/|-->")
_LINE_HEAD = re.compile(r"[ \t]*(?:\[rank\d+\]:)?[ \t]*")  # what may stand before a comment's mark at a line's start
_STEP_LINES = [(word, re.compile(pattern.pattern, re.M)) for word, pattern in step_line_patterns()]
_WORD_AFTER = 64  # how far into a step line its word may lie (slime's "perf 12: {"): where to look for the line
_LOG_PREFIX = re.compile(r"[\w \t\[\]():.,=|+@/-]*")  # timestamps, [rank0]:, [titan], (Actor pid=1), logger - INFO -


def require_log_text(path: Path) -> None:
    """Refuse (UserError, naming the file and line) a file that is not a training log's text by the rules above."""
    path = Path(path)
    fd = open_regular(path)
    with os.fdopen(fd, "rb") as handle:
        if os.fstat(handle.fileno()).st_size > MAX_LOG_BYTES:
            raise UserError(f"{shown(path)}: over {MAX_LOG_BYTES // 2**30} GiB, too large for one run's training "
                            "log; give the log itself, not an archive or a dump")
        decoder = codecs.getincrementaldecoder("utf-8")("strict")
        line, carry, read = 1, "", 0
        while chunk := handle.read(_CHUNK_BYTES):
            read += len(chunk)
            if read > MAX_LOG_BYTES:  # the file grew while being read
                raise UserError(f"{shown(path)}: over {MAX_LOG_BYTES // 2**30} GiB, too large for a training log")
            try:
                text = carry + decoder.decode(chunk)
            except UnicodeDecodeError as error:
                at = line + chunk[:max(error.start, 0)].count(b"\n")  # the carried line holds no line end
                raise UserError(f"{shown(path)}:{at}: not UTF-8 text; a training log is text as the engine wrote it, "
                                "not a binary or another encoding") from None
            whole, newline, carry = text.rpartition("\n")
            if not newline:
                whole, carry = "", text
            if len(carry) > MAX_LINE_BYTES:
                raise UserError(f"{shown(path)}:{line}: a line over {MAX_LINE_BYTES // MIB} MiB; not a training log "
                                "line (a binary file?)")
            if newline:
                _check_lines(path, whole + "\n", line)
                line += whole.count("\n") + 1
        _check_lines(path, carry, line)  # the last line; a character cut off at the end is left undecoded


def _check_lines(path: Path, text: str, first_line: int) -> None:
    """The rules on whole lines of `text`, whose first line is line `first_line` of the file."""
    text = strip_colour(text)

    def fail(at: int, what: str) -> None:
        start, end = text.rfind("\n", 0, at) + 1, text.find("\n", at)
        seen = shown(text[start:end if end >= 0 else len(text)].strip()[:60])
        raise UserError(f"{shown(path)}:{first_line + text.count(chr(10), 0, at)}: {what} ('{seen}'); a training log "
                        "holds only the engine's own lines: give the log the run wrote")

    if match := _CONTROL.search(text):
        fail(match.start(), f"a control character (\\x{ord(match.group()):02x}), not text")
    if match := _MARKUP.search(text):
        fail(match.start(), "HTML or XML markup, not a log line")
    for match in _COMMENT_MARK.finditer(text):
        start, end = _line_around(text, match.start())
        if _LINE_HEAD.fullmatch(text, start, match.start()) or _closes_line(text, match, end):
            fail(match.start(), "a script comment, not a log line")
    for word, step_line in _STEP_LINES:  # found by their word first: a regex tried at every position is slow
        at = text.find(word)
        while at >= 0:
            start, end = _line_around(text, at)
            match = step_line.search(text, max(start, at - _WORD_AFTER), end)
            prefix = text[start:match.start()] if match else ""
            if match and (not _LOG_PREFIX.fullmatch(prefix) or "//" in prefix):
                fail(match.start(), "a step line with other text before the log's own prefix")
            at = text.find(word, end)


def _line_around(text: str, at: int) -> tuple[int, int]:
    end = text.find("\n", at)
    return text.rfind("\n", 0, at) + 1, len(text) if end < 0 else end


def _closes_line(text: str, match: re.Match, end: int) -> bool:
    """A block comment opened (`x; /*`) or closed (`... */`) at the end of its line; a path's glob (`data/*`,
    `runs/*/`, `**/*.yaml`) is not one."""
    mark, before = match.group(), text[match.start() - 1:match.start()]
    if mark not in ("/*", "*/") or text[match.end():end].strip(" \t\r"):
        return False
    return not (before.isalnum() or before in "_.~/*-") if mark == "/*" else before not in ("/", "*")
