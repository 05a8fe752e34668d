"""YAML reading that remembers where every value came from.

Errors must name the file, the dotted field and its line, and published figures are compared at the precision
they were written with, so the loader keeps each scalar's line and raw text next to the parsed data.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from openrecipes.errors import UserError


class _StrictLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # libyaml's parser: ~10x faster
    """A safe loader that leaves dates as text (the typed model parses them, so a bad date is a field error,
    not a loader crash); duplicate keys are rejected while indexing (a silently overwritten field is a lie)."""


_StrictLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


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
                    f"{doc.path}:{key_node.start_mark.line + 1}: field '{join_path(path, key)}' is written twice; "
                    "keep one"
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
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise UserError(f"{path}: not UTF-8 text (byte {error.start}); save the file as UTF-8") from None
    except OSError as error:
        raise UserError(f"{path}: cannot read ({error.strerror}); check the path") from None
    return parse_yaml(text, Path(path))


def parse_yaml(text: str, path: Path) -> YamlDocument:
    doc = YamlDocument(path=path, data=None)
    try:
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
        raise UserError(f"{path}{where}: not valid YAML ({error.problem}); fix the syntax there") from None
    except (yaml.YAMLError, ValueError, RecursionError) as error:
        raise UserError(f"{path}: not valid YAML ({error}); fix the syntax") from None
    return doc
