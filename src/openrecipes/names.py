"""One spelling rule for the names a user types (models, GPU types, chat formats, tokenizer families): any case,
`-` and `_` alike. Each name keeps one canonical spelling, the one its table writes, and that is what every command
shows; the catalog's tables are resolved through `catalog/names.py`, the rows room's formats through this directly
(rows imports no catalog)."""

from __future__ import annotations

from collections.abc import Iterable

from openrecipes.errors import UserError


def spelling_key(name: str) -> str:
    """What two spellings of one name share: case folded, `_` read as `-` (dots stay: qwen3-1.7b is not 17b)."""
    return name.strip().casefold().replace("_", "-")


def canonical(given: str, known: Iterable[str], what: str, where: str) -> str:
    """The canonical spelling of `given` among `known`, or a UserError naming the known ones and where they live."""
    names = list(known)
    by_key = {spelling_key(name): name for name in names}
    found = by_key.get(spelling_key(given))
    if found is None:
        raise UserError(f"unknown {what} '{given}'; known: {', '.join(sorted(names))} ({where})")
    return found
