"""Setting a few fields of a YAML text in place. Only their lines are rewritten, found by ruamel.yaml's positions, so
every other byte (comments, key order, quoting, folded scalars) is kept: a ruamel dump of the whole document would
re-fold long plain scalars and write `null` as nothing."""

import re
from typing import Any

from ruamel.yaml import YAML, CommentedMap, CommentedSeq
from ruamel.yaml.error import YAMLError

from openrecipes.errors import UserError


def _load(text: str, where: str, fix: str) -> tuple[Any, list[str]]:
    try:
        doc = YAML(typ="rt").load(text)
    except YAMLError as error:  # a duplicated key too, so that a field is never set in one copy of two
        mark, problem = getattr(error, "problem_mark", None), getattr(error, "problem", None) or error
        raise UserError(f"{where}: {f'line {mark.line + 1}: ' if mark else ''}{' '.join(str(problem).split())}; "
                        f"{fix}") from None
    # ruamel.yaml's line breaks: str.splitlines would also split at \f, \x85, \u2028 and more, shifting every line.
    return doc, [line for line in re.split(r"(?<=\n)|(?<=\r)(?!\n)", text) if line]


def _mapping(doc: Any, lines: list[str], keys: tuple[str, ...]) -> tuple[Any, int]:
    """The value at `keys` (None where a key is absent) and the line its parent's field ends before."""
    mapping, stop = doc, len(lines)
    for key in keys:
        found = isinstance(mapping, CommentedMap) and key in mapping.lc.data
        stop, mapping = (_end(lines, mapping, key, stop), mapping[key]) if found else (stop, None)
    return mapping, stop


def set_fields(text: str, changes: dict[tuple[str, ...], str | list[str]], where: str, fix: str) -> str:
    """`text` with each field (its path of keys) set to its YAML text, a list to its items' in the old list's style;
    a field its mapping lacks is added after the mapping's last key. What this cannot edit is a UserError."""
    doc, lines = _load(text, where, fix)
    splices = []
    for path, value in changes.items():
        (mapping, stop), name = _mapping(doc, lines, path[:-1]), path[-1]
        if not isinstance(mapping, CommentedMap) or mapping.fa.flow_style() or isinstance(mapping.get(name), dict):
            raise UserError(f"{where}: cannot set {'.'.join(path)} in place: '{'.'.join(path[:-1])}' must be a block "
                            f"of `key: value` lines (not absent, a list, a value or {{...}}) and {name} not a mapping; "
                            f"{fix}")
        splices.append(_splice(lines, mapping, stop, name, value))
    for start, end, new in sorted(splices[::-1], key=lambda splice: splice[0], reverse=True):  # added: in order
        lines[start:end] = [new]
    return "".join(lines)


def append_item(text: str, path: tuple[str, ...], item: str, where: str, fix: str) -> str:
    """`text` with `item` (a list item's lines, indented) last in the block list at `path`, before the blank lines
    after it; an absent list is added with the item at the end of its mapping. What this cannot edit is a UserError."""
    doc, lines = _load(text, where, fix)
    (mapping, stop), name = _mapping(doc, lines, path[:-1]), path[-1]
    old = mapping.get(name) if isinstance(mapping, CommentedMap) else None
    if not isinstance(mapping, CommentedMap) or mapping.fa.flow_style() or old is not None and (
            not isinstance(old, CommentedSeq) or old.fa.flow_style() is not False):  # `[]`: None
        raise UserError(f"{where}: cannot append to {'.'.join(path)} in place: it must be absent, empty or a list of "
                        f"`- item` lines, in a block of `key: value` lines; {fix}")
    if name in mapping.lc.data:  # the item goes after the comments that end the list, as the list's own lines
        at = _end(lines, mapping, name, stop, past=("",))
    else:
        at, item = stop, f"{' ' * mapping.lc.col}{name}:\n{item}"
    return "".join(lines[:at]) + _glue(lines, at) + item + "".join(lines[at:])


def _splice(lines: list[str], mapping: CommentedMap, stop: int, name: str, value: str | list[str]) -> tuple:
    flow = f"[{', '.join(value)}]" if isinstance(value, list) else value
    if name not in mapping.lc.data:  # absent, or only merged in by `<<:`
        at, last = _end(lines, mapping, list(mapping.lc.data)[-1], stop), list(mapping.lc.data)[-1]
        return at, at, f"{_glue(lines, at)}{' ' * mapping.lc.key(last)[1]}{name}: {flow}\n"
    first, (value_line, column), old = mapping.lc.key(name)[0], mapping.lc.value(name), mapping[name]
    body = text = lines[first].rstrip("\r\n")
    comment = (mapping.ca.items.get(name) or [None] * 3)[2]
    if comment is not None and comment.start_mark.line == first and comment.value.startswith("#"):
        body = text[:comment.start_mark.column].rstrip()  # the comment after the value stays
    head, tail = body[:column] if value_line == first else body + " ", text[len(body):]
    new = [head + flow + tail]
    if isinstance(value, list) and isinstance(old, CommentedSeq) and old and not old.fa.flow_style():
        new = [body + tail] + [f"{' ' * (old.lc.item(0)[1] - 2)}- {item}" for item in value]
    end = _end(lines, mapping, name, stop)
    return first, end, "\n".join(new) + lines[end - 1][len(lines[end - 1].rstrip("\r\n")):]


def _end(lines: list[str], mapping: CommentedMap, name: str, stop: int, past: tuple[str, ...] = ("", "#")) -> int:
    """The line after the field: the next key's (`stop` after the last), up past the blank and comment lines (those
    whose first character is in `past`) before it."""
    keys = list(mapping.lc.data)  # its own keys, in order: not those merged in by `<<:`
    end = next((mapping.lc.key(key)[0] for key in keys[keys.index(name) + 1:]), stop)
    while end > mapping.lc.key(name)[0] + 1 and lines[end - 1].strip()[:1] in past:
        end -= 1
    return end


def _glue(lines: list[str], at: int) -> str:
    """The line break text inserted at line `at` needs first: the file's last line may have none."""
    return "" if not at or lines[at - 1].endswith(("\n", "\r")) else "\n"
