"""What an audit finds and the evidence level it gives: computed here, never written in a recipe by hand. The levels
and the one decision between them are catalog/evidence.py's (the catalog's `list` and `show` print them too)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from openrecipes.catalog.evidence import EvidenceLevel
from openrecipes.verdict import Finding

# Decimals convergence figures are published with, wherever our code writes them (the seeds write 0.999935, 0.00085).
CORRELATION_DECIMALS, LOSS_DIFFERENCE_DECIMALS = 7, 6


@dataclass(frozen=True)
class AuditReport:
    path: Path
    earned: EvidenceLevel  # what the entry's stored evidence earns (catalog.evidence.evidence_level), findings aside
    findings: tuple[Finding, ...] = field(default_factory=tuple)

    @property
    def ok(self) -> bool:
        return not self.findings

    @property
    def evidence(self) -> EvidenceLevel:
        return "failed" if self.findings else self.earned

    def as_json(self) -> dict:
        return {"path": str(self.path), "evidence": self.evidence, "ok": self.ok,
                "findings": [f.as_json() for f in self.findings]}
