"""Reading a recipe's `run` script: its exports, its bash arrays and the launcher's flags.

The validator compares these with the layout and env fields, and the configuration check compares two recipes'
flags. Only the shell the catalog uses is understood: `export A=B C=D`, `NAME=( ... )` arrays expanded by
`${NAME[@]}`, backslash continuations, `#` comments, quotes and `$( ... )` substitutions kept as one word.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache

from openrecipes.errors import UserError

_ARRAY_START = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=\($")
_ARRAY_USE = re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_]*)\[@\]\}$|^\"\$\{([A-Za-z_][A-Za-z0-9_]*)\[@\]\}\"$")
_LAUNCHERS = ("python3", "python", "torchrun")


class CommandError(ValueError):
    """The run script cannot be read; the message names the line."""


@dataclass
class ParsedRun:
    exports: dict[str, str] = field(default_factory=dict)
    arrays: dict[str, list[str]] = field(default_factory=dict)
    launcher: list[str] = field(default_factory=list)  # words before the first flag, e.g. ['torchrun', ...]
    argv: list[str] = field(default_factory=list)  # the launch command's words, arrays expanded
    flags: dict[str, list[str]] = field(default_factory=dict)  # --flag -> its values ([] for a switch)
    repeated: list[str] = field(default_factory=list)  # flags given more than once
    conflicts: dict[str, tuple[list[str], list[str]]] = field(default_factory=dict)  # flag -> two differing values

    def has(self, flag: str) -> bool:
        return flag in self.flags

    def value(self, flag: str) -> str | None:
        values = self.flags.get(flag)
        return " ".join(values) if values else None


_PLAIN = re.compile(r"[^\s'\"$#)]+")  # a run of characters with no meaning to the word splitter
_SPECIAL = re.compile(r"['\"$#\\]")  # a line without these is split on whitespace alone
_SUBSTITUTION_EDGE = re.compile(r"\$\(|\)")
# One piece of a word, as POSIX shell (and shlex) reads it: '...' literal, "..." with \" and \\ escaped, \x, text.
_WORD_PIECE = re.compile(r"'([^']*)'|\"((?:[^\"\\]|\\.)*)\"|\\(.)|([^'\"\\]+)", re.DOTALL)
_ESCAPED_IN_DOUBLE_QUOTES = re.compile(r"\\([\"\\])")


def _excerpt(text: str) -> str:
    text = text.strip()
    return text if len(text) <= 80 else text[:77] + "..."


def split_words(line: str) -> list[str]:
    """Shell words of one logical line: quotes removed, `$( ... )` kept whole, a `#` word ends the line.
    Linear in the line's length (a recipe's run may hold a megabyte-long word)."""
    if not _SPECIAL.search(line):
        return line.split()
    words: list[str] = []
    current: list[str] = []
    depth, i, n = 0, 0, len(line)
    while i < n:
        if depth:  # inside $( ... ): everything up to the matching ')' belongs to the word
            edge = _SUBSTITUTION_EDGE.search(line, i)
            if edge is None:
                break
            current.append(line[i:edge.end()])
            depth += 1 if edge.group() == "$(" else -1
            i = edge.end()
            continue
        ch = line[i]
        if ch in "'\"":
            end = line.find(ch, i + 1)
            if end < 0:
                raise CommandError("unbalanced quote or $( in: " + _excerpt(line))
            current.append(line[i:end + 1])
            i = end + 1
        elif line.startswith("$(", i):
            depth = 1
            current.append("$(")
            i += 2
        elif ch.isspace():
            if current:
                words.append("".join(current))
                current = []
            i += 1
        elif ch == "#" and not current:
            break
        else:
            plain = _PLAIN.match(line, i)
            current.append(plain.group() if plain else ch)
            i = plain.end() if plain else i + 1
    if depth:
        raise CommandError("unbalanced quote or $( in: " + _excerpt(line))
    if current:
        words.append("".join(current))
    return [w if "$(" in w else _unquote(w) for w in words]


def _unquote(word: str) -> str:
    """The word with its quotes and escapes removed, as shlex.split reads one word (in linear time)."""
    if not _SPECIAL.search(word):
        return word
    pieces, at = [], 0
    for match in _WORD_PIECE.finditer(word):
        if match.start() != at:
            break
        single, double, escaped, plain = match.groups()
        pieces.append(single if single is not None else
                      _ESCAPED_IN_DOUBLE_QUOTES.sub(r"\1", double) if double is not None else
                      escaped if escaped is not None else plain)
        at = match.end()
    if at != len(word):
        raise CommandError(f"unbalanced quote or a trailing backslash in word {_excerpt(word)!r}")
    return "".join(pieces)


def logical_lines(text: str) -> list[tuple[int, str]]:
    """(first line number, text) of each logical line, backslash continuations joined."""
    lines: list[tuple[int, str]] = []
    buffer: list[str] = []
    start = 0
    # An empty line after the last ends a continuation the text leaves open.
    for number, raw in enumerate([*text.splitlines(), ""], start=1):
        if not buffer:
            start = number
        stripped = raw.rstrip()
        if stripped.endswith("\\"):
            buffer.append(stripped[:-1] + " ")
            continue
        buffer.append(raw)
        joined = "".join(buffer)
        if joined.strip():
            lines.append((start, joined))
        buffer = []
    return lines


def parse_run(text: str) -> ParsedRun:
    parsed = ParsedRun()
    array_name: str | None = None
    for number, line in logical_lines(text):
        try:
            words = split_words(line)
        except CommandError as error:
            raise CommandError(f"run line {number}: {error}") from None
        if not words:
            continue
        if array_name is not None:
            if words == [")"]:
                array_name = None
            else:
                parsed.arrays[array_name].extend(words)
            continue
        match = _ARRAY_START.match(" ".join(words))
        if match:
            array_name = match.group(1)
            parsed.arrays[array_name] = []
        elif words[0] == "export":
            for assignment in words[1:]:
                name, sep, value = assignment.partition("=")
                if not sep:
                    raise CommandError(f"run line {number}: 'export {assignment}' has no value; write NAME=VALUE")
                parsed.exports[name] = value
        elif words[0] in _LAUNCHERS and not parsed.argv:
            parsed.argv = _expand(words, parsed.arrays)
            _read_flags(parsed)
    if array_name is not None:
        raise CommandError(f"run: the array {array_name}=( is never closed with ')'")
    return parsed


def parse_or_fail(text: str, where: object) -> ParsedRun:
    """parse_run, a script it cannot read being a UserError that names `where`."""
    try:
        return parse_run(text)
    except CommandError as error:
        raise UserError(f"{where}: {error}") from None


@cache
def read_run(text: str) -> ParsedRun | CommandError:
    """A run script read once per process for every caller (the validator, each page that shows it), keyed by its
    text, or the error that says why it cannot be read: the shell reader is most of a recipe's validation at scale.
    Callers only read the result."""
    try:
        return parse_run(text)
    except CommandError as error:
        return error


def _expand(words: list[str], arrays: dict[str, list[str]]) -> list[str]:
    out: list[str] = []
    for word in words:
        match = _ARRAY_USE.match(word)
        name = match and (match.group(1) or match.group(2))
        out.extend(arrays.get(name, [word]) if name else [word])
    return out


def _read_flags(parsed: ParsedRun) -> None:
    current: str | None = None
    given: dict[str, list[list[str]]] = {}  # flag -> the values of each time it is given
    for word in parsed.argv:
        if word.startswith("--"):
            flag, sep, inline = word.partition("=")
            if flag in parsed.flags:
                parsed.repeated.append(flag)
            parsed.flags[flag] = [inline] if sep else []
            given.setdefault(flag, []).append(parsed.flags[flag])
            current = flag
        elif current is None or _is_short_option(word):
            # Words outside any --flag (the program, `-m module`) belong to the launcher.
            parsed.launcher.append(word)
            current = None
        elif not word.startswith("${"):
            parsed.flags[current].append(word)
        else:
            current = None  # an unexpanded array ends the previous flag's values
    for flag, values in given.items():
        other = next((v for v in values[1:] if v != values[0]), None)
        if other is not None:
            parsed.conflicts[flag] = (values[0], other)


def _is_short_option(word: str) -> bool:
    return word.startswith("-") and not word.startswith("--") and not re.match(r"^-\d", word)


_VARIABLE = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)(\[@\])?\}?")
_ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=")
_PLACEHOLDER = re.compile(r"<[A-Za-z][^<>\n]*>")


@dataclass
class CommandInputs:
    """What a run script needs from outside itself, in order of first use."""

    variables: list[str] = field(default_factory=list)  # $NAME read but never set by the script
    arrays: list[str] = field(default_factory=list)  # ${NAME[@]} expanded but never defined by the script
    placeholders: list[str] = field(default_factory=list)  # <words> left for the reader to fill in
    exports: dict[str, str] = field(default_factory=dict)  # what the script exports itself
    program: list[str] = field(default_factory=list)  # the launch line's program words (script or -m module)


def command_inputs(text: str) -> CommandInputs:
    """The outside inputs of a run script: variables and arrays it reads without setting, and placeholders."""
    parsed = read_run(text)
    if isinstance(parsed, CommandError):
        raise CommandError(str(parsed))
    inputs = CommandInputs(exports=dict(parsed.exports))
    assigned = set(parsed.exports) | set(parsed.arrays)
    for _, line in logical_lines(text):
        words = split_words(line)
        assigned |= {m.group(1) for w in words[:1] if (m := _ASSIGNMENT.match(w))}
        for word in words:
            for match in _VARIABLE.finditer(word):
                name, array = match.group(1), match.group(2)
                found = inputs.arrays if array else inputs.variables
                if name not in assigned and name not in found:
                    found.append(name)
        inputs.placeholders += _PLACEHOLDER.findall(line.partition(" #")[0])
    inputs.placeholders = list(dict.fromkeys(inputs.placeholders))  # each once, in order of first use
    # The program: a script (train_async.py) or a dotted module after -m; a placeholder is listed above instead.
    inputs.program = [w for w in parsed.launcher
                      if (w.endswith(".py") or "." in w) and not w.startswith("-") and not _PLACEHOLDER.search(w)][:1]
    return inputs
