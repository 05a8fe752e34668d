"""YAML reading that remembers where every value came from, and that a stranger's file cannot abuse.

Errors must name the file, the dotted field and its line, and published figures are compared at the precision
they were written with, so the loader keeps each scalar's line and raw text next to the parsed data.

Recipes, model cards, hardware tables and rules files come from pull requests, so the reader refuses what no
catalog file needs and what can hang or crash a reader: anchors and aliases (a "billion laughs" document),
explicit tags, nesting deeper than MAX_DEPTH (a C stack overflow in the composer), files over MAX_YAML_BYTES.
Plain scalars resolve as YAML 1.2's core schema does: `.inf`, `.nan`, `0x1`, `0o7`, `1_000`, `1:30`, `yes`/`no` and
bare dates stay text, so a number field holding one is a schema error naming the field, not a silent number.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from openrecipes.errors import UserError
from openrecipes.textfile import MIB, read_text, shown

MAX_YAML_BYTES = 1 * MIB  # the largest catalog file is ~25 KB
MAX_DEPTH = 32  # a recipe nests 5 levels deep


if TYPE_CHECKING:
    _SafeLoader = yaml.CSafeLoader
else:  # libyaml's parser where PyYAML was built with it: ~10x faster
    _SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


# Plain scalars that are not text, by first character, each with its value: YAML 1.2 core scalars and no dates (the
# typed model parses dates, so a bad date is a field error, not a loader crash). Integers of up to 18 digits (a
# longer one stays text and the schema's bounds refuse it); floats need a dot, as in YAML 1.1, so '1e-05' stays
# text as it always has. Every other plain scalar, and every quoted one, is text.
_IMPLICIT: tuple[tuple[str, tuple[str, ...], Callable[[str], Any]], ...] = (
    (r"^(?:true|True|TRUE|false|False|FALSE)$", tuple("tTfF"), lambda text: text.lower() == "true"),
    (r"^[-+]?(?:0|[1-9][0-9]{0,17})$", tuple("-+0123456789"), int),
    (r"^[-+]?(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][-+][0-9]+)?$", tuple("-+0123456789."), float),
    (r"^(?:~|null|Null|NULL|)$", ("~", "n", "N", ""), lambda text: None),
)
_BY_FIRST: dict[str, list[tuple[re.Pattern[str], Callable[[str], Any]]]] = {}
for _pattern, _firsts, _value in _IMPLICIT:
    for _first in _firsts:
        _BY_FIRST.setdefault(_first, []).append((re.compile(_pattern), _value))


def _scalar(event: yaml.ScalarEvent) -> Any:
    text = event.value
    if event.implicit[0]:  # plain, not quoted
        for pattern, value in _BY_FIRST.get(text[:1], ()):
            if pattern.match(text):
                return value(text)
    return text


@dataclass
class YamlDocument:
    path: Path
    data: Any
    lines: dict[str, int] = field(default_factory=dict)  # dotted path -> 1-based line
    raw: dict[str, str] = field(default_factory=dict)  # dotted path -> scalar text as written

    def line_of(self, dotted: str) -> int | None:
        """The line of a field, or of its nearest written parent when the field itself is missing."""
        while dotted:
            if dotted in self.lines:
                return self.lines[dotted]
            dotted = dotted.rpartition(".")[0]
        return 1 if self.lines else None


def join_path(parent: str, key: object) -> str:
    return f"{parent}.{key}" if parent else str(key)


def read_yaml(path: Path) -> YamlDocument:
    """Parse one YAML file; any unreadable or malformed input becomes a UserError naming file and line."""
    return parse_yaml(read_text(Path(path), MAX_YAML_BYTES, "YAML file"), Path(path))


class _Open:
    """A mapping or sequence being read: its value, its dotted path, and (a mapping) the key awaiting its value."""

    __slots__ = ("value", "path", "key", "key_path", "seen", "skip")

    def __init__(self, value: dict | list, path: str, skip: bool) -> None:
        self.value, self.path, self.skip = value, path, skip
        self.key: Any = _NO_KEY
        self.key_path = ""
        self.seen: set[str] = set()


_NO_KEY, _UNHASHABLE = object(), object()


def _read(text: str, doc: YamlDocument) -> None:
    """One pass over libyaml's events: abuse is refused as it comes, before anything deeper is read (a deep document
    would overflow a C stack in a composer), and the data, each field's line and each scalar's text are built at
    once. A problem of the document's meaning (a second document, a field written twice, a list or mapping as a
    key) waits until the whole stream has parsed, so a syntax error anywhere is reported first, and the three in
    the order PyYAML's composer and constructor meet them."""
    path = doc.path
    loader = _SafeLoader(text)
    another: yaml.MarkedYAMLError | None = None
    duplicate: UserError | None = None
    unhashable: yaml.MarkedYAMLError | None = None
    stack: list[_Open] = []
    documents, first_document = 0, None
    try:
        while True:
            event: Any = loader.get_event()  # libyaml's events, typed as their base class
            kind = type(event)
            if kind is yaml.StreamEndEvent:
                break
            if kind is yaml.MappingEndEvent or kind is yaml.SequenceEndEvent:
                stack.pop()
                continue
            if kind is yaml.DocumentStartEvent:
                documents += 1
                first_document = first_document or event.start_mark
                if documents == 2:
                    another = yaml.composer.ComposerError("expected a single document in the stream", first_document,
                                                          "but found another document", event.start_mark)
                continue
            if kind is yaml.DocumentEndEvent or kind is yaml.StreamStartEvent:
                continue
            line = event.start_mark.line + 1 if event.start_mark else 1
            if kind is yaml.AliasEvent or event.anchor is not None:
                raise UserError(f"{shown(path)}:{line}: YAML anchors and aliases (&name, *name) are not allowed; "
                                "write the value out")
            if event.tag is not None:
                raise UserError(f"{shown(path)}:{line}: YAML tags ({event.tag}) are not allowed; write a plain value")
            collection = kind is not yaml.ScalarEvent
            if collection and len(stack) >= MAX_DEPTH:  # the stack holds every open collection
                raise UserError(f"{shown(path)}:{line}: nested deeper than {MAX_DEPTH} levels; "
                                "a catalog file needs a few")
            value: Any = ({} if kind is yaml.MappingStartEvent else []) if collection else _scalar(event)
            parent = stack[-1] if stack else None
            skip, dotted = documents > 1 or (parent is not None and parent.skip), ""
            if skip:
                pass
            elif parent is None:
                doc.data = value
            elif isinstance(parent.value, list):
                dotted = join_path(parent.path, len(parent.value))
                doc.lines[dotted] = line
                parent.value.append(value)
            elif parent.key is _NO_KEY and collection:  # a list or mapping as a key: neither it nor its value is read
                unhashable = unhashable or yaml.constructor.ConstructorError(
                    "while constructing a mapping", None, "found unhashable key", event.start_mark)
                parent.key, skip = _UNHASHABLE, True
            elif parent.key is _NO_KEY:  # a key
                dotted = join_path(parent.path, event.value)
                if event.value in parent.seen:
                    duplicate = duplicate or UserError(f"{shown(path)}:{line}: field '{dotted}' is written twice; "
                                                       "keep one")
                parent.seen.add(event.value)
                doc.lines[dotted] = line
                parent.key, parent.key_path = value, dotted
                continue
            elif parent.key is _UNHASHABLE:
                parent.key, skip = _NO_KEY, True
            else:  # the value of the key before it
                dotted = parent.key_path
                parent.value[parent.key] = value
                parent.key = _NO_KEY
            if collection:
                stack.append(_Open(value, dotted, skip))
            elif not skip:
                doc.raw[dotted] = event.value
    finally:
        loader.dispose()
    for problem in (another, duplicate, unhashable):
        if problem is not None:
            raise problem


def parse_yaml(text: str, path: Path) -> YamlDocument:
    doc = YamlDocument(path=path, data=None)
    try:
        _read(text, doc)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f":{mark.line + 1}" if mark else ""
        raise UserError(f"{shown(path)}{where}: not valid YAML ({error.problem}); fix the syntax there") from None
    except (yaml.YAMLError, ValueError, RecursionError) as error:
        raise UserError(f"{shown(path)}: not valid YAML ({error}); fix the syntax") from None
    return doc
