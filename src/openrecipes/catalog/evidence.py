"""The evidence level an entry earns: the one decision behind `audit`, `list`, `show` and the site.

- re-derived: the recipe names its raw logs under runs: and every figure was re-derived from them and agrees;
- author-reported: no stored logs (the seed pages' recipes, a vendor's published table): the figures agree with each
  other and, where the entry names a stored excerpt of its source, with that excerpt, not with a log;
- audited: a published entry re-derived from its stored excerpt whose source passed an independent review (MLPerf
  Training's closed division, reviewed by the other submitters before publication);
- predicted: a recipe `plan emit` wrote (`status: planned`) that never ran: its figures are the planner's;
- failed: a finding of `openrecipes audit`, whichever kind of entry.

Here, below the audit, so that the catalog's own commands print the level from what an entry stores; the audit
re-derives the figures and turns the level to failed where any disagrees.
"""

from __future__ import annotations

from typing import Literal

from openrecipes.catalog.model import PublishedSummary, Recipe

EvidenceLevel = Literal["re-derived", "audited", "author-reported", "predicted", "failed"]
EVIDENCE_LEVELS: tuple[EvidenceLevel, ...] = ("re-derived", "audited", "author-reported", "predicted", "failed")
EVIDENCE_MEANING: dict[EvidenceLevel, str] = {  # each level in a line, as `show` prints it
    "re-derived": "every figure re-derived from the raw logs stored under runs/",
    "audited": "re-derived from the stored excerpt of an independently reviewed source",
    "author-reported": "figures as their authors report them, checked against each other; no raw logs stored",
    "predicted": "the planner's prediction; never run",
    "failed": "`openrecipes audit` found a figure that disagrees with its evidence",
}


def evidence_level(entry: Recipe | PublishedSummary) -> EvidenceLevel:
    """What the entry's stored evidence earns; the audit's level too, unless the audit finds anything (failed)."""
    if isinstance(entry, PublishedSummary):
        derivation = entry.published.derivation if entry.published else None
        return "audited" if derivation and derivation.audited else "author-reported"
    if entry.runs is not None:
        return "re-derived"
    return "predicted" if entry.status == "planned" else "author-reported"
