"""One spelling rule for the names a user types (models, GPU types, chat formats, tokenizer families): any case,
`-` and `_` alike. Each name keeps one canonical spelling, the one its table writes, and that is what every command
shows; the catalog's tables are resolved through `catalog/names.py`, the rows room's formats through this directly
(rows imports no catalog). The one rule for a name that becomes a file or folder name (a recorded recipe, a run
folder). And the one spelling of a layout's parallel degrees, which recipes, published entries and the planner's
layouts all show."""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache

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


MAX_PLAIN_NAME = 100
# Letters, digits, `.`, `_` and `-`, starting with a letter or a digit: one path component that stays where it is
# put (no `/`, no `..`, no leading dot or dash), printable, the same bytes on every file system.
_PLAIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def is_plain_name(name: str) -> bool:
    return bool(_PLAIN.fullmatch(name)) and ".." not in name and len(name) <= MAX_PLAIN_NAME


def plain_name(given: str, what: str) -> str:
    """`given` when it is a plain name; else a UserError naming `what` (the option or file it came from)."""
    if not is_plain_name(given):
        raise UserError(f"{what} {ascii(given)[:80]}: not a plain name (letters, digits, '.', '_' and '-', starting "
                        f"with a letter or digit, no '..', at most {MAX_PLAIN_NAME} characters); choose another; "
                        "nothing was written")
    return given


@cache  # the planner labels thousands of layouts with a few dozen labels
def layout_label(tp: int, pp: int, dp: float | None, vp: int | None = None, cp: int | None = None,
                 ep: int | None = None, etp: int | None = None, fsdp: int | None = None) -> str:
    """`TP4 PP2 CP4 EP32 DP2`, as the seeds' recipes write it: TP, PP and DP always, VP, CP, EP and ETP above 1, and
    first a published entry's FSDP degree where it gives one above 0 (torchtitan's shards; Megatron-Bridge's column,
    0 for DDP). DP None leaves DP out: a weak-scaling sweep's layout, whose DP grows with its GPUs."""
    shown = [f"FSDP{fsdp}"] if fsdp else []
    shown += [f"TP{tp}", f"PP{pp}"] + [f"{name}{degree}" for name, degree in (("VP", vp), ("CP", cp), ("EP", ep),
                                                                               ("ETP", etp)) if degree and degree > 1]
    return " ".join(shown + ([] if dp is None else [f"DP{dp:g}"]))
