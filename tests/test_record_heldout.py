"""The planner held out against the public record by source and scale band, and per weak-scaling sweep: the tables
docs/public-record.md and benchmarks/RESULTS.md carry are what the stored held-out predictions give today."""

from __future__ import annotations

import pytest
from conftest import REPO

from openrecipes.catalog.store import load_catalog
from openrecipes.plan.public_record import compared
from openrecipes.plan.record_heldout import band_of, band_rows, report, source_of, sweep_rows


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(REPO)


def test_the_bands_split_at_8_64_and_1024_gpus():
    assert [band_of(n) for n in (1, 8, 9, 64, 65, 1024, 1025, 8192)] == [
        "1-8", "1-8", "9-64", "9-64", "65-1,024", "65-1,024", "1,025+", "1,025+"]
    assert source_of("record-mlperf-v51-fp8-8gpu") == "MLPerf Training" and source_of("x") == "other"


def test_the_docs_and_results_carry_the_table_the_held_out_predictions_give(catalog):
    table = report(catalog)
    for page in ("docs/public-record.md", "benchmarks/RESULTS.md"):
        assert table in (REPO / page).read_text(encoding="utf-8"), f"{page}: re-run benchmarks/record_heldout.py"


def test_both_new_sources_are_held_out_at_every_scale_and_their_sweeps_compared(catalog):
    rows = compared(catalog)
    bands = {(r.source, r.band): r for r in band_rows(rows)}
    for source in ("dgxc-benchmarking", "MLPerf Training"):
        assert bands[(source, "1,025+")].expressed >= 5, source
    assert bands[("dgxc-benchmarking", "65-1,024")].within == 1.0  # every dgxc entry there within 20%, held out
    sweeps = sweep_rows(catalog, rows)
    assert len(sweeps) >= 30 and all(s.smallest < s.largest for s in sweeps)
    h100_8192 = next(s for s in sweeps if s.sweep == "mlperf-v5.0-nvidia-llama-3.1-405b-fp8-H100-tp8pp8cp2vp8")
    assert (h100_8192.smallest, h100_8192.largest) == (512, 8192) and h100_8192.published_loss > 0.1
