"""Reading a recipe's `run` script: its exports, its bash arrays and the launcher's flags.

The validator compares these with the layout and env fields, and the configuration check compares two recipes'
flags. Only the shell the catalog uses is understood: `export A=B C=D`, `NAME=( ... )` arrays expanded by
`${NAME[@]}`, backslash continuations, `#` comments, quotes and `$( ... )` substitutions kept as one word.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

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

    def has(self, flag: str) -> bool:
        return flag in self.flags

    def value(self, flag: str) -> str | None:
        values = self.flags.get(flag)
        return " ".join(values) if values else None


def split_words(line: str) -> list[str]:
    """Shell words of one logical line: quotes removed, `$( ... )` kept whole, a `#` word ends the line."""
    words, current, depth, quote = [], "", 0, ""
    i = 0
    while i < len(line):
        ch = line[i]
        if quote:
            current += ch
            if ch == quote:
                quote = ""
        elif line.startswith("$(", i):
            depth += 1
            current += "$("
            i += 1
        elif ch == ")" and depth:
            depth -= 1
            current += ch
        elif depth:
            current += ch
        elif ch in "'\"":
            quote = ch
            current += ch
        elif ch.isspace():
            if current:
                words.append(current)
                current = ""
        elif ch == "#" and not current:
            break
        else:
            current += ch
        i += 1
    if quote or depth:
        raise CommandError("unbalanced quote or $( in: " + line.strip())
    if current:
        words.append(current)
    return [w if "$(" in w else _unquote(w) for w in words]


def _unquote(word: str) -> str:
    try:
        parts = shlex.split(word)
    except ValueError as error:
        raise CommandError(f"{error} in word {word!r}") from None
    return parts[0] if len(parts) == 1 else word


def logical_lines(text: str) -> list[tuple[int, str]]:
    """(first line number, text) of each logical line, backslash continuations joined."""
    lines, buffer, start = [], "", 0
    for number, raw in enumerate(text.splitlines(), start=1):
        if not buffer:
            start = number
        if raw.rstrip().endswith("\\"):
            buffer += raw.rstrip()[:-1] + " "
            continue
        buffer += raw
        if buffer.strip():
            lines.append((start, buffer))
        buffer = ""
    if buffer.strip():
        lines.append((start, buffer))
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


def _expand(words: list[str], arrays: dict[str, list[str]]) -> list[str]:
    out: list[str] = []
    for word in words:
        match = _ARRAY_USE.match(word)
        name = match and (match.group(1) or match.group(2))
        out.extend(arrays[name] if name in arrays else [word])
    return out


def _read_flags(parsed: ParsedRun) -> None:
    current: str | None = None
    for word in parsed.argv:
        if word.startswith("--"):
            flag, sep, inline = word.partition("=")
            if flag in parsed.flags:
                parsed.repeated.append(flag)
            parsed.flags[flag] = [inline] if sep else []
            current = flag
        elif current is None or _is_short_option(word):
            # Words outside any --flag (the program, `-m module`) belong to the launcher.
            parsed.launcher.append(word)
            current = None
        elif not word.startswith("${"):
            parsed.flags[current].append(word)
        else:
            current = None  # an unexpanded array ends the previous flag's values


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
    parsed = parse_run(text)
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
        for placeholder in _PLACEHOLDER.findall(line.partition(" #")[0]):
            if placeholder not in inputs.placeholders:
                inputs.placeholders.append(placeholder)
    # The program: a script (train_async.py) or a dotted module after -m; a placeholder is listed above instead.
    inputs.program = [w for w in parsed.launcher
                      if (w.endswith(".py") or "." in w) and not w.startswith("-") and not _PLACEHOLDER.search(w)][:1]
    return inputs
