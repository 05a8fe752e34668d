"""What an audit finds and the evidence level it gives: computed here, never written in a recipe by hand.

- re-derived: the recipe names its raw logs under runs: and every figure was re-derived from them and agrees;
- author-reported: no stored logs (the seed pages' recipes, a vendor's published table): the figures agree with each
  other and, where the entry names a stored excerpt of its source, with that excerpt, not with a log;
- audited: a published entry re-derived from its stored excerpt whose source passed an independent review (MLPerf
  Training's closed division, reviewed by the other submitters before publication);
- failed: a finding, whichever kind of recipe.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from openrecipes.verdict import Finding

EvidenceLevel = Literal["re-derived", "audited", "author-reported", "failed"]
EVIDENCE_LEVELS: tuple[EvidenceLevel, ...] = ("re-derived", "audited", "author-reported", "failed")
# Decimals convergence figures are published with, wherever our code writes them (the seeds write 0.999935, 0.00085).
CORRELATION_DECIMALS, LOSS_DIFFERENCE_DECIMALS = 7, 6


@dataclass(frozen=True)
class AuditReport:
    path: Path
    has_logs: bool  # the recipe names runs: (its figures can be re-derived)
    findings: tuple[Finding, ...] = field(default_factory=tuple)
    audited: bool = False  # a published entry re-derived from the excerpt of an independently reviewed source

    @property
    def ok(self) -> bool:
        return not self.findings

    @property
    def evidence(self) -> EvidenceLevel:
        if self.findings:
            return "failed"
        if self.audited:
            return "audited"
        return "re-derived" if self.has_logs else "author-reported"

    def as_json(self) -> dict:
        return {"path": str(self.path), "evidence": self.evidence, "ok": self.ok,
                "findings": [f.as_json() for f in self.findings]}
