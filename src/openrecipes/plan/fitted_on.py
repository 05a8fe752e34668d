"""The catalog entries the planner is fitted on: derived/fitted_on.json, a named snapshot of the catalog.

The fitted values, the held-out tables and every range are computed from the recipes and published entries this
file names, not from whatever the catalog holds today. An entry added since is data the planner has never seen: it
is predicted as any question is, and its error is out of sample as it stands (a plan's measured row and the
record's table give it so). One new recipe therefore moves no fitted value, no held-out table and no other model's
plan: `openrecipes refresh` writes its own model's plan and answer grid again, in seconds. `openrecipes refresh
--refit` names every entry of the catalog here and fits the planner on them; a maintainer runs it when the new
entries have been looked at as the test set they are. An entry named here and edited since is an input that moved:
the fit and the held-out tables are computed again, as for any changed input.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from openrecipes.catalog.paths import DERIVED
from openrecipes.catalog.store import Catalog
from openrecipes.errors import UserError
from openrecipes.textfile import MIB, read_text, shown

FITTED_ON_FILE = DERIVED / "fitted_on.json"
MAX_BYTES = 16 * MIB  # about 70 bytes an entry


def fitted_slugs(path: Path | None = None) -> frozenset[str] | None:
    """The slugs of the entries the planner is fitted on (FITTED_ON_FILE unless `path`); None where no snapshot was
    written yet (every entry). Read once per version of the file: every point and record entry asks."""
    path = path or FITTED_ON_FILE
    if not path.is_file():
        return None
    info = path.stat()
    return _read(path, info.st_mtime_ns, info.st_size)


@lru_cache(maxsize=4)
def _read(path: Path, mtime_ns: int, size: int) -> frozenset[str]:
    """The file's slugs; the modification time and size key the cache, so a rewritten file is read again."""
    fix = "run `openrecipes refresh --refit` to write it again"
    try:
        found = json.loads(read_text(path, MAX_BYTES, "fitted-on file"))
    except json.JSONDecodeError as error:
        raise UserError(f"{shown(path)}: not valid JSON ({error}); {fix}") from None
    entries = found.get("entries") if isinstance(found, dict) else None
    if not isinstance(entries, list) or not all(isinstance(slug, str) for slug in entries):
        raise UserError(f"{shown(path)}: `entries` is not a list of catalog slugs; {fix}")
    return frozenset(entries)


def is_fitted(slug: str, fitted: frozenset[str] | None) -> bool:
    return fitted is None or slug in fitted


def catalog_slugs(catalog: Catalog) -> list[str]:
    """Every recipe's and published entry's slug: what `refresh --refit` names."""
    return sorted({entry.slug for entry in catalog.recipes} | {entry.slug for entry in catalog.record})


def entries_text(count: int) -> str:
    return f"{count} {'entry' if count == 1 else 'entries'}"


def snapshot_text(slugs: list[str]) -> str:
    """The file's text: one slug a line, so that a refit's diff is one line per entry it adds."""
    return json.dumps({"entries": sorted(slugs)}, indent=1) + "\n"
