"""Fuzzing the public record: randomly mutated published entries always get a verdict (never a traceback), and
randomly mutated source tables always import (exit 0) or are refused with exit 2 and one line, recipes/ untouched."""

from __future__ import annotations

import copy
import io
import tempfile
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import yaml
from conftest import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_catalog_fuzz import paths_of, values
from test_public_record import MEGATRON, MOE, TORCHTITAN
from test_public_record_import import GOOD_ROW, HEADER, _catalog, _summary
from test_public_record_import import MEGATRON as IMPORTER

from openrecipes.catalog.validate import validate_file
from openrecipes.record.importer import run_script

ENTRIES = [yaml.safe_load(p.read_text(encoding="utf-8")) for p in (MEGATRON, MOE, TORCHTITAN)]
FUZZ = settings(max_examples=examples(200), deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
CELLS = st.one_of(st.sampled_from(["", "n/a", "0", "-1", "1e9", "3", "7 (9)", "NaN", "1,024", "8 | 8", "FP8-MX",
                                   "NVFP4", "fp7", "DGX-GB200", "[^x]", "99999999999999999999999", "1.5", "|"]),
                  st.text(max_size=12))


@FUZZ
@given(seed=st.sampled_from(ENTRIES), data=st.data(), value=values)
def test_mutated_published_entries_never_crash(tmp_path, seed, data, value):
    entry = copy.deepcopy(seed)
    path = data.draw(st.sampled_from(list(paths_of(entry))))
    node = entry
    for key in path[:-1]:
        node = node[key]
    if data.draw(st.booleans()):
        node[path[-1]] = value
    elif isinstance(node, dict):
        del node[path[-1]]
    file = tmp_path / "recipes/m/h100/e.yaml"
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(yaml.safe_dump(entry), encoding="utf-8")
    report = validate_file(file)  # must not raise
    assert report.ok or (report.errors and all(e.message for e in report.errors))


@FUZZ
@given(cells=st.lists(CELLS, min_size=1, max_size=15), where=st.integers(0, 12), header=st.booleans())
def test_mutated_source_tables_import_or_exit_2_with_one_line(cells, where, header):
    parts = GOOD_ROW.strip().strip("|").split("|")
    parts[where % len(parts):where % len(parts) + len(cells)] = cells
    row = "|" + "|".join(parts) + "|\n"
    table = HEADER.replace("| TP |", "| T P |") if header else HEADER
    with tempfile.TemporaryDirectory() as scratch:
        root = _catalog(Path(scratch), _summary(GOOD_ROW + row).replace(HEADER, table, 1))
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            code = run_script(IMPORTER.import_megatron_bridge, ["--root", str(root)])
        written = sorted(p.name for p in (root / "recipes").rglob("*.yaml"))
        assert code in (0, 2)
        if code == 2:
            assert err.getvalue().count("\n") == 1 and err.getvalue().startswith("error: ") and not written
        else:
            assert written and all(validate_file(p).ok for p in (root / "recipes").rglob("*.yaml"))
