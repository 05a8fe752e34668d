"""`plan` at an 80-column terminal (one line a row, numbers whole, the columns left out named, each range basis once,
a closed pipe no error) and `plan MODEL ... --layout`: exactly the layout a user runs, built, not searched for."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import openrecipes

REPO = Path(__file__).resolve().parents[1]
NARROW = {**os.environ, "COLUMNS": "80", "PYTHONPATH": os.environ.get("PYTHONPATH", str(REPO / "src"))}
QWEN = ("plan", "qwen3-8b", "--gpu", "H200", "--gpus", "2")
# a figure as the tables print it: 9,453 or 8,579-15,589* or -10.2% or 124.4
FIGURE = re.compile(r"\d[\d,.]*")


def _process(*args: str, **kwargs: object) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "openrecipes", *args], env=NARROW, capture_output=True, text=True,
                          cwd=REPO, timeout=120, check=False, **kwargs)  # type: ignore[call-overload]


def _whole(figure: str) -> bool:
    """A figure not cut across lines: its thousands in groups of three."""
    whole = figure.split(".")[0]
    return "," not in whole or re.fullmatch(r"\d{1,3}(,\d{3})+", whole) is not None


def test_plan_at_80_columns_is_one_line_a_row_and_names_what_it_leaves_out():
    result = _process(*QWEN)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    ranked = [line for line in lines if re.match(r"\s*(\d+|-|M) TP\d", line)]
    predicted = [line for line in ranked if not line.lstrip().startswith("M")]  # a measured recipe above them
    assert len(predicted) == 20 + 5  # the 20 best fitting, the 5 closest that do not fit
    assert all(re.search(r"\d \s*[\d,]+-[\d,]+\*?\s+\d+\s+[\d.]+ (yes|margin|no|measured)\s*$", line)
               for line in predicted), ranked
    assert "TP1 PP1 DP2 MB1 C NR" in predicted[0]  # names.layout_label's degrees and the terse marks
    text = " ".join(result.stdout.split())
    assert "Left out at 80 columns: Tokens/GPU, Headroom, MFU, $/1M" in text and "--wide shows them all" in text
    assert "capacity 140.4 GiB" in text and "predicted peak of 140.4" not in text
    assert text.count("central 90% of the errors") == 1  # each basis once: the shared sentence, then each one's own
    assert "Basis 1: that range; 2: that range, but no measured torchtitan layout" in text
    assert "C: compiled, NR: no reshard after forward" in text


def test_wide_shows_every_column_at_80():
    result = _process(*QWEN, "--top", "1", "--wide")
    assert result.returncode == 0, result.stderr
    header = next(line for line in result.stdout.splitlines() if "Tokens/s/GPU" in line)
    assert all(name in header for name in ("Tokens/GPU", "Headroom", "MFU", "$/1M", "Basis"))
    assert "Left out at" not in result.stdout and "…" not in result.stdout


def test_compare_at_80_columns_never_splits_a_number():
    result = _process("plan", "compare", "llama-3.1-8b")
    assert result.returncode == 0, result.stderr
    assert max(len(line) for line in result.stdout.splitlines()) <= 80
    figures = FIGURE.findall(result.stdout)
    assert figures and all(_whole(figure) for figure in figures), [f for f in figures if not _whole(f)]
    rows = re.findall(r" x \S+ .*?\s[\d,]+\s+([\d,]+|-)\s+([+-]\d+\.\d%|-)\s*$", result.stdout, re.MULTILINE)
    entries = int(re.search(r": (\d+) published entries", result.stdout)[1])  # type: ignore[index]
    assert len(rows) == entries > 10  # every entry's published, held-out and error figures on one line
    assert "Left out at 80 columns: Engine, Precision, Range; --wide shows them all" in result.stdout
    assert "-: not expressed: fp8-tensorwise" in result.stdout


def test_a_closed_pipe_is_not_an_error():
    """`openrecipes plan ... | head -1`: the reader has what it wanted; exit 0, nothing on stderr."""
    process = subprocess.Popen([sys.executable, "-m", "openrecipes", *QWEN, "--top", "0", "--json"], env=NARROW,
                               cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None
    process.stdout.readline()
    process.stdout.close()
    assert process.wait(timeout=120) == 0
    assert process.stderr.read() == b""


def test_layout_predicts_exactly_the_layout_written(monkeypatch):
    ranked = json.loads(openrecipes(*QWEN, "--top", "0", "--json").stdout)
    same = next(row for row in ranked if row["label"] == "TP1 PP2 VP3 DP1" and row["rows_per_microbatch"] == 1
                and row["compile"] and row["recompute"] == "none" and not row["kernels"])
    from openrecipes.plan import predict

    def enumerated(*args: object, **kwargs: object) -> None:
        raise AssertionError("--layout builds its one layout; it enumerates none")

    monkeypatch.setattr(predict, "enumerate_layouts", enumerated)
    given = openrecipes(*QWEN, "--layout", "tp1 PP2 VP3 MB1 C", "--json")
    assert given.returncode == 0, given.stderr
    [row] = json.loads(given.stdout)
    assert row == same  # the one row, in plan --json's shape, as the ranking predicts it
    text = " ".join(openrecipes(*QWEN, "--layout", "TP1 PP2 VP3 DP1 MB1 C", columns=80).stdout.split())
    assert "TP1 PP2 VP3 DP1 MB1 C" in text and "fits: 105.7 GiB of 140.4 GiB" in text and "memory per GPU" in text


def test_layout_says_why_it_does_not_fit():
    result = openrecipes("plan", "qwen3-8b", "--gpu", "H200", "--gpus", "1", "--layout", "TP1 PP1 MB8", columns=80)
    assert result.returncode == 0, result.stderr
    assert "does not fit: " in " ".join(result.stdout.split())


def test_layout_at_1024_gpus_is_built_not_searched():
    result = openrecipes("plan", "deepseek-v3", "--gpu", "H100", "--gpus", "1024", "--engine", "megatron",
                         "--global-batch", "8192", "--layout", "TP2 PP8 VP4 EP64 MB1 full off0.5", "--json")
    assert result.returncode == 0, result.stderr
    [row] = json.loads(result.stdout)
    assert (row["tp"], row["pp"], row["vpp"], row["ep"], row["dp"], row["offload_fraction"]) == (2, 8, 4, 64, 64, 0.5)


@pytest.mark.parametrize(("written", "said"), [
    ("TP1 PP1 XX3", "cannot read 'XX3'; the words are TPn PPn"),
    ("TP1 PP1 MB1 sel full", "one recompute at most"),
    ("TP1 PP1 DP4", "DP4 with TP x PP x CP = 1 takes 4 GPUs, not --gpus 2"),
    ("TP3 PP1", "TP x PP x CP = 3 does not divide --gpus 2"),
    ("TP1 PP1 EP2", "EP and ETP are for a mixture of experts"),
    ("TP1 PP1 MB1 mxfp8", "mxfp8 is Megatron's"),
    ("TP1 PP1 VP2", "VP2 needs PP > 1"),
])
def test_a_layout_that_cannot_be_read_or_run_is_refused_in_one_line(written, said):
    result = openrecipes(*QWEN, "--layout", written)
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
    assert f'--layout "{written}"' in result.stderr and said in " ".join(result.stderr.split())


@pytest.mark.parametrize("request_", [
    ("qwen3-8b", "H200", 2, 8192, 16, "torchtitan", "measured"),
    ("gpt-oss-20b", "H200", 8, 8192, 128, "megatron", None),
], ids=["torchtitan", "megatron"])
def test_every_label_the_table_writes_reads_back_as_its_layout(request_):
    """A row's Layout cell pasted into --layout is that row's layout: one spelling both ways."""
    from openrecipes.plan.given import built, read_layout
    from openrecipes.plan.levers import parse_levers
    from openrecipes.plan.predict import PlanRequest, context, predict
    from openrecipes.plan.words import short_label

    model, gpu, gpus, row_tokens, global_batch, engine, float8 = request_
    levers, search = parse_levers(None, None, float8)
    request = PlanRequest(model, gpu, gpus, row_tokens, global_batch, engine, **levers, search=search)
    ranked, ctx = predict(request), context(request)
    assert len({p.layout for p in ranked}) == len(ranked) > 100
    for p in ranked:
        label = short_label(p.layout)
        assert built(ctx, read_layout(label), label) == p.layout, label
