"""NVIDIA's dgxc-benchmarking tables imported cell by cell from their stored excerpts: every figure checked against
the table's own step time and batch, a malformed or contradicting cell refused with its file and line, and `audit`
re-deriving each committed entry from its excerpt."""

from __future__ import annotations

import importlib.util
import shutil

import pytest
from conftest import REPO

from openrecipes.audit.review import audit
from openrecipes.record.importer import run_script

SPEC = importlib.util.spec_from_file_location("import_dgxc_benchmarking", REPO / "scripts/import_dgxc_benchmarking.py")
DGXC = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(DGXC)

HEADER = ("# origin: NVIDIA/dgxc-benchmarking llama3.1/README_8b.md\n# commit: " + "a" * 40
          + "\n# file sha256: " + "b" * 64 + "\n# kept: every table line\n")
TABLE = ("52: | Llama 3.1 8b 24.09 BF16 (TP=1, PP=1, CP=2, MBS=1, GA=32) | Throughput on 8x H100 GPUs (GBS=128) | "
         "Throughput on 16x H100 GPUs (GBS=256) |\n"
         "53: |---|:---:|:---:|\n"
         "54: | Training step time (seconds per step) | 12.91  | 13.00  |\n"
         "55: | Throughput in tokens per second       | 81225  | 161319 |\n"
         "56: | Model flops utilization               | 59.38% | 59.01% |\n")


def _catalog(tmp_path, table: str):
    root = tmp_path / "catalog"
    (root / "recipes").mkdir(parents=True)
    excerpt = root / "data/record-sources/dgxc-benchmarking/v24.11.1/llama3.1/README_8b.md.txt"
    excerpt.parent.mkdir(parents=True)
    excerpt.write_text(HEADER + table, encoding="utf-8")
    return root


def _run(root, capsys):
    code = run_script(DGXC.import_dgxc_benchmarking, ["--root", str(root)])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_each_cell_is_an_entry_of_one_sweep_with_its_figures_as_published(tmp_path, capsys):
    root = _catalog(tmp_path, TABLE)
    code, out, err = _run(root, capsys)
    assert code == 0 and err == "" and "wrote 2 entries" in out
    written = sorted((root / "recipes/llama-3.1-8b/h100").glob("record-dgxc-*.yaml"))
    assert [p.name for p in written] == ["record-dgxc-v24.11.1-bf16-16gpu-cp2-gbs256.yaml",
                                         "record-dgxc-v24.11.1-bf16-8gpu-cp2-gbs128.yaml"]
    text = written[1].read_text(encoding="utf-8")
    assert "tokens_per_s_per_gpu: 10153.12\n" in text  # 81225 / 8
    assert "step_time_s: 12.91\n" in text and "published_tokens_per_s: 81225\n" in text
    assert "published_mfu_percent: 59.38\n" in text and "line: 55\n" in text
    sweeps = {line for p in written for line in p.read_text().splitlines() if "sweep:" in line}
    assert sweeps == {"    sweep: dgxc-v24.11.1-llama-3.1-8b-bf16-H100-tp1pp1cp2vp1"}
    assert [r.evidence for r in audit(root)] == ["author-reported", "author-reported"]


BAD = [
    ("a malformed step time", TABLE.replace("12.91 ", "12.9 1"), ":54: step time '12.9 1' is not a positive number"),
    ("a figure the table contradicts", TABLE.replace("81225", "91225"),
     ":55: 8 GPUs: published 91225 tokens/s, but 8192 x GBS 128 / step time 12.91 s = 81222"),
    ("an unknown row", TABLE.replace("Model flops utilization", "Model flops"), ":56: unknown or repeated row"),
    ("an unknown layout key", TABLE.replace("MBS=1", "XBS=1"), ":52: 'XBS=1' is not one of TP, PP"),
    ("an unknown column", TABLE.replace("16x H100 GPUs", "16x H300 GPUs"), ":52: column 'Throughput on 16x H300"),
    ("a line out of order", TABLE.replace("56:", "50:"), ":9: not '<line>: <text>'"),
]


@pytest.mark.parametrize(("table", "message"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_input_is_exit_2_with_one_line_and_nothing_written(tmp_path, capsys, table, message):
    root = _catalog(tmp_path, table)
    code, out, err = _run(root, capsys)
    assert code == 2 and out == "" and err.count("\n") == 1 and message in err, err
    assert err.startswith("error: data/record-sources/dgxc-benchmarking/v24.11.1/llama3.1/README_8b.md.txt:")
    assert not list((root / "recipes").rglob("*.yaml")) and not list(root.glob(".import-*"))


def test_a_tampered_entry_or_excerpt_is_an_audit_finding(tmp_path, capsys):
    root = _catalog(tmp_path, TABLE)
    assert _run(root, capsys)[0] == 0
    entry = root / "recipes/llama-3.1-8b/h100/record-dgxc-v24.11.1-bf16-8gpu-cp2-gbs128.yaml"
    entry.write_text(entry.read_text().replace("10153.12", "10200.0"), encoding="utf-8")
    [report] = audit(root, [entry])
    assert report.evidence == "failed" and "result: stored" in report.findings[0].message
    excerpt = next((root / "data/record-sources").rglob("*.txt"))
    excerpt.write_text(excerpt.read_text().replace("59.01%", "59.02%"), encoding="utf-8")
    [report] = audit(root, [entry.with_name("record-dgxc-v24.11.1-bf16-16gpu-cp2-gbs256.yaml")])
    assert report.evidence == "failed" and "sha256" in report.findings[0].message


def test_the_committed_record_spans_the_sweeps_up_to_2304_gpus(tmp_path):
    """Every committed dgxc entry re-derives from its excerpt; the sweeps reach 2,048 GPUs and more."""
    root = tmp_path / "catalog"
    for folder in ("recipes", "models", "hardware", "data/record-sources"):
        shutil.copytree(REPO / folder, root / folder)
    reports = [r for r in audit(root) if r.path.name.startswith("record-dgxc-")]
    assert len(reports) >= 130 and all(r.evidence == "author-reported" for r in reports)
    counts = {int(r.path.name.split("gpu-")[0].rsplit("-", 1)[1]) for r in reports}
    assert max(counts) == 2304 and 2048 in counts and min(counts) == 8
