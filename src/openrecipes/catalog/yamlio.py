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


class _StrictLoader(_SafeLoader):
    """A safe loader with YAML 1.2 core scalars and no dates (the typed model parses dates, so a bad date is a field
    error, not a loader crash); duplicate keys are rejected while indexing (a silently overwritten field is a lie)."""


# Plain scalars that are not text. Integers of up to 18 digits (a longer one stays text and the schema's bounds
# refuse it); floats need a dot, as in YAML 1.1, so '1e-05' stays text as it always has.
_IMPLICIT = (
    ("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    ("tag:yaml.org,2002:int", r"^[-+]?(?:0|[1-9][0-9]{0,17})$", "-+0123456789"),
    ("tag:yaml.org,2002:float", r"^[-+]?(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][-+][0-9]+)?$", "-+0123456789."),
    ("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""]),
)
_StrictLoader.yaml_implicit_resolvers = {}
for _tag, _pattern, _firsts in _IMPLICIT:
    _StrictLoader.add_implicit_resolver(_tag, re.compile(_pattern), list(_firsts))


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


def _index(node: yaml.Node, path: str, doc: YamlDocument) -> None:
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            key = str(key_node.value)
            if key in seen:
                raise UserError(
                    f"{shown(doc.path)}:{key_node.start_mark.line + 1}: field '{join_path(path, key)}' is written "
                    "twice; keep one"
                )
            seen.add(key)
            child = join_path(path, key)
            doc.lines[child] = key_node.start_mark.line + 1
            _index(value_node, child, doc)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            child = join_path(path, i)
            doc.lines[child] = item.start_mark.line + 1
            _index(item, child, doc)
    elif isinstance(node, yaml.ScalarNode):
        doc.raw[path] = node.value


def read_yaml(path: Path) -> YamlDocument:
    """Parse one YAML file; any unreadable or malformed input becomes a UserError naming file and line."""
    return parse_yaml(read_text(Path(path), MAX_YAML_BYTES, "YAML file"), Path(path))


def _refuse_abuse(text: str, path: Path) -> None:
    """Anchors, aliases, tags and deep nesting are refused from the event stream, before any node is built."""
    depth = 0
    for event in yaml.parse(text, Loader=_StrictLoader):
        line = event.start_mark.line + 1 if event.start_mark else 1
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise UserError(f"{shown(path)}:{line}: YAML anchors and aliases (&name, *name) are not allowed; "
                            "write the value out")
        tag = getattr(event, "tag", None)
        if tag is not None:
            raise UserError(f"{shown(path)}:{line}: YAML tags ({tag}) are not allowed; write a plain value")
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise UserError(f"{shown(path)}:{line}: nested deeper than {MAX_DEPTH} levels; "
                                "a catalog file needs a few")
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def parse_yaml(text: str, path: Path) -> YamlDocument:
    doc = YamlDocument(path=path, data=None)
    try:
        _refuse_abuse(text, path)
        loader = _StrictLoader(text)
        try:
            node = loader.get_single_node()
            if node is not None:
                _index(node, "", doc)
                doc.data = loader.construct_document(node)
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f":{mark.line + 1}" if mark else ""
        raise UserError(f"{shown(path)}{where}: not valid YAML ({error.problem}); fix the syntax there") from None
    except (yaml.YAMLError, ValueError, RecursionError) as error:
        raise UserError(f"{shown(path)}: not valid YAML ({error}); fix the syntax") from None
    return doc
