"""One reader of step lines (measure.formats.read_log): `measure`, `check convergence` (either arm) and `reproduce`
refuse a log whose steps are reordered, written twice or missing, with the same one line naming the line."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import REPO, openrecipes

LOG = REPO / "tests/fixtures/logs/torchtitan-0.2.2-qwen3-8b-fsdp2-2xh200.log"
RECIPE = REPO / "recipes/qwen3-8b/h200/torchtitan-stock-fsdp2.yaml"


def _damaged(tmp_path: Path, how: str) -> Path:
    lines = LOG.read_text(encoding="utf-8").splitlines(keepends=True)
    at = [n for n, line in enumerate(lines) if " step: " in line]
    if how == "reordered":
        lines[at[3]], lines[at[4]] = lines[at[4]], lines[at[3]]
    elif how == "duplicated":
        lines.insert(at[4] + 1, lines[at[4]])
    else:
        del lines[at[4]]
    path = tmp_path / f"{how}.log"
    path.write_text("".join(lines), encoding="utf-8")
    return path


@pytest.mark.parametrize("how, says", [("reordered", "comes after step"), ("duplicated", "is also at"),
                                       ("missing", "are missing before")])
def test_every_reader_refuses_a_damaged_step_sequence_alike(tmp_path, how, says):
    log = _damaged(tmp_path, how)
    errors = set()
    for argv in (["measure", log, "--window", "5", "10"],
                 ["check", "convergence", "--candidate", log, "--reference", LOG],
                 ["check", "convergence", "--candidate", LOG, "--reference", log],
                 ["reproduce", RECIPE, log]):
        result = openrecipes(*argv)
        assert result.returncode == 2, f"{argv[0]}: exit {result.returncode}\n{result.stdout}"
        assert says in result.stderr and f"{how}.log:" in result.stderr, result.stderr
        errors.add(result.stderr)
    assert len(errors) == 1, errors


def test_a_curve_csv_in_another_order_is_refused(tmp_path):
    curve = tmp_path / "curve.csv"
    curve.write_text("step,loss\n0,10\n2,9\n1,9.5\n", encoding="utf-8")
    result = openrecipes("check", "convergence", "--candidate", curve, "--reference", curve)
    assert result.returncode == 2 and "comes after step 2" in result.stderr, result.stderr
