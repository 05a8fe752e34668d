"""Published entries re-derived from the stored excerpts of their sources (docs/public-record.md).

An entry with a `published.derivation` block names its excerpt and the excerpt's sha256; its importer's parser
(catalog/record_dgxc.py, catalog/record_mlperf.py) reads the same lines again and must give the stored entry field
for field. Any difference, a changed excerpt or one that no longer parses, is a finding.
"""

from __future__ import annotations

from pathlib import Path

from openrecipes.catalog.model import PublishedSummary
from openrecipes.catalog.yamlio import YamlDocument
from openrecipes.errors import UserError
from openrecipes.record import dgxc as record_dgxc
from openrecipes.record import mlperf as record_mlperf
from openrecipes.verdict import Finding


def excerpt_findings(entry: PublishedSummary, doc: YamlDocument, path: Path, root: Path) -> list[Finding]:
    """Findings of one published entry against its excerpt; none for an entry copied whole (no derivation)."""
    run = entry.published
    if run is None or run.derivation is None:
        return []
    data = doc.data if isinstance(doc.data, dict) else {}
    importer = record_dgxc if run.derivation.method == "table-throughput" else record_mlperf
    try:
        problems = importer.rederive(data, path.stem, root)
    except UserError as error:
        problems = [f"the excerpt no longer parses: {error}"]
    return [Finding("published.derivation", None, None, f"not re-derived from {run.derivation.excerpt}: {problem}")
            for problem in problems]
