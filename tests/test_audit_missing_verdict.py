"""A recipe whose runs: hold both arms but whose correctness: has no convergence verdict: the audit names the
missing block and the verdict the logs give (exit 1), it does not crash."""

from __future__ import annotations

import re

from test_audit import OURS_8B, catalog, findings_of  # noqa: F401  (catalog is the fixture)


def test_a_missing_convergence_verdict_is_a_finding_naming_the_verdict(catalog):  # noqa: F811
    path = catalog / OURS_8B
    text = path.read_text(encoding="utf-8")
    without = re.sub(r"\n  convergence:\n(?:    .*\n|      .*\n)+", "\n  convergence: null\n", text, count=1)
    assert without != text
    path.write_text(without, encoding="utf-8")
    code, report = findings_of(catalog, OURS_8B)
    assert code == 1
    assert [(f["field"], f["derived"]) for f in report["findings"]] == [("correctness.convergence", "pass")]
