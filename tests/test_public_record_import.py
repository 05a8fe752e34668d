"""The importers of the public record (scripts/import_*.py): they reproduce the committed entries from the stored
copies, report every skipped row, and refuse a malformed source with exit 2 and one line, leaving recipes/ as it
was."""

from __future__ import annotations

import hashlib
import importlib.util
import shutil
import subprocess
import sys

import pytest
from conftest import REPO

from openrecipes.errors import UserError
from openrecipes.record.importer import markdown_tables, run_script


def _script(name):
    spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


MEGATRON = _script("import_megatron_bridge")
TORCHTITAN = _script("import_torchtitan")
HEADER = ("| System | #-GPUs | Precision | GBS | MBS | Sequence Length | TP | PP | CP | VP | EP | Tokens / sec / GPU | "
          "Model TFLOP / sec / GPU |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
GOOD_ROW = "| DGX-GB300 | 8 | MXFP8 | 512 | 8 | 4096 | 1 | 1 | 1 | n/a | 8 | 44544 | 1029 |\n"
NO_CARD = ("#### Model: Nemotron_3_Super\n\n" + HEADER
           + "| DGX-GB300 | 64 | MXFP8 | 512 | 1 | 8192 | 1 | 1 | 1 | n/a | 64 | 9652 | 817 |\n")


def _summary(rows: str) -> str:
    return ("# Performance\n\n## 26.08 NeMo Container\n\n### Pre-Training Performance\n\n#### Model: Qwen3_30B_a3B\n\n"
            + HEADER + rows + "\n" + NO_CARD)


def _catalog(tmp_path, summary: str, archive: str = "# Performance Archive\n"):
    """A catalog folder with the two Megatron-Bridge files stored and named in its manifest (bundled cards)."""
    root = tmp_path / "catalog"
    (root / "recipes").mkdir(parents=True)
    stored = root / "data/public-record/NVIDIA-NeMo/Megatron-Bridge/docs"
    stored.mkdir(parents=True)
    sources = []
    for name, text in (("performance-summary.md", summary), ("performance-summary-archive.md", archive)):
        (stored / name).write_text(text, encoding="utf-8")
        sources.append(f"- repository: NVIDIA-NeMo/Megatron-Bridge\n  path: docs/{name}\n  commit: {'a' * 40}\n"
                       f"  sha256: {hashlib.sha256(text.encode()).hexdigest()}\n")
    (root / "data/public-record/manifest.yaml").write_text("sources:\n" + "".join(sources), encoding="utf-8")
    return root


def _run(module, root, capsys, *args):
    importer = next(getattr(module, name) for name in dir(module) if name.startswith("import_"))
    code = run_script(importer, ["--root", str(root), *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def _files(root):
    return {p.relative_to(root): p.read_bytes() for p in sorted((root / "recipes").rglob("*.yaml"))}


def test_a_good_table_is_imported_and_a_row_without_a_card_is_reported(tmp_path, capsys):
    root = _catalog(tmp_path, _summary(GOOD_ROW))
    code, out, err = _run(MEGATRON, root, capsys)
    assert code == 0 and err == ""
    written = list(_files(root))
    assert [p.parent.as_posix() for p in written] == ["recipes/qwen3-30b-a3b/gb300"]
    assert ("skipped data/public-record/NVIDIA-NeMo/Megatron-Bridge/docs/performance-summary.md:17: "
            "Nemotron_3_Super: no model card") in out
    assert "wrote 1 entries, skipped 1 rows" in out
    text = (root / written[0]).read_text(encoding="utf-8")
    assert "tokens_per_s_per_gpu: 44544\n" in text and "model_tflops_per_gpu: 1029\n" in text
    assert f"row: '{GOOD_ROW.strip()}'" in text and "line: 11" in text


def test_a_rerun_is_idempotent_and_a_row_gone_from_the_source_takes_its_entry_only_when_allowed(tmp_path, capsys):
    second = GOOD_ROW.replace("| 8 | MXFP8 | 512 | 8 |", "| 16 | MXFP8 | 512 | 4 |")
    root = _catalog(tmp_path, _summary(GOOD_ROW + second))
    code, _, err = _run(MEGATRON, root, capsys)
    assert code == 0, err
    first = _files(root)
    assert len(first) == 2
    assert _run(MEGATRON, root, capsys)[0] == 0 and _files(root) == first
    smaller = _catalog(tmp_path / "again", _summary(GOOD_ROW))
    shutil.rmtree(smaller / "recipes")
    shutil.copytree(root / "recipes", smaller / "recipes")
    code, out, err = _run(MEGATRON, smaller, capsys)
    gone = next(str(p) for p in first if "16gpu" in p.name)
    assert code == 2 and out == "" and err.count("\n") == 1 and gone in err and "--allow-removals" in err, err
    assert len(_files(smaller)) == 2
    code, out, _ = _run(MEGATRON, smaller, capsys, "--allow-removals")
    assert code == 0 and f"removed {gone}" in out and len(_files(smaller)) == 1


MALFORMED = [
    ("a row with a missing cell", GOOD_ROW.replace("| 1029 |", "|"), "table row has 12 cells, its header 13"),
    ("degrees that do not divide the GPUs", GOOD_ROW.replace("| 1 | 1 | 1 | n/a |", "| 3 | 1 | 1 | n/a |"),
     "published.layout: TP 3 x PP 1 x CP 1 = 3 does not divide the 8 GPUs"),
    ("an unknown precision", GOOD_ROW.replace("MXFP8", "FP6"), "unknown precision 'FP6'"),
    ("an unknown system", GOOD_ROW.replace("DGX-GB300", "DGX-X9"), "unknown system 'DGX-X9'"),
    ("a negative figure", GOOD_ROW.replace("44544", "-44544"), "'-44544' is not a number"),
    ("a text figure", GOOD_ROW.replace("44544", "fast"), "'fast' is not a number"),
    ("an absurd TFLOP/s", GOOD_ROW.replace("| 1029 |", "| 9029 |"), "more than a factor of 2 apart"),
]


@pytest.mark.parametrize(("row", "message"), [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED])
def test_a_malformed_row_is_exit_2_naming_file_and_line_and_writes_nothing(tmp_path, capsys, row, message):
    root = _catalog(tmp_path, _summary(GOOD_ROW + row))
    keep = root / "recipes/qwen3-30b-a3b/gb300/record-mbridge-old.yaml"
    keep.parent.mkdir(parents=True)
    keep.write_text("# an earlier import's file\n", encoding="utf-8")
    before = _files(root)
    code, out, err = _run(MEGATRON, root, capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(
        "error: data/public-record/NVIDIA-NeMo/Megatron-Bridge/docs/performance-summary.md:12: ") and message in err
    assert _files(root) == before  # nothing written, nothing removed
    assert not list(root.glob(".import-*"))


def test_an_edited_stored_copy_is_refused(tmp_path, capsys):
    root = _catalog(tmp_path, _summary(GOOD_ROW))
    stored = root / "data/public-record/NVIDIA-NeMo/Megatron-Bridge/docs/performance-summary.md"
    stored.write_text(stored.read_text(encoding="utf-8").replace("44544", "54544"), encoding="utf-8")
    code, _, err = _run(MEGATRON, root, capsys)
    assert code == 2 and "differs from the manifest" in err and not _files(root)


def test_a_usage_mistake_or_a_missing_folder_is_one_line(tmp_path, capsys):
    code, _, err = _run(MEGATRON, tmp_path / "nowhere", capsys)
    assert code == 2 and err.count("\n") == 1 and "data/public-record/manifest.yaml" in err
    assert run_script(MEGATRON.import_megatron_bridge, ["--rooot", "x"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_a_stored_copy_that_is_not_utf8_is_refused_with_its_line(tmp_path, capsys):
    root = _catalog(tmp_path, _summary(GOOD_ROW))
    stored = root / "data/public-record/NVIDIA-NeMo/Megatron-Bridge/docs/performance-summary.md"
    stored.write_bytes(stored.read_bytes().replace(b"44544", b"44\xff44"))
    code, _, err = _run(MEGATRON, root, capsys)
    assert code == 2 and "performance-summary.md" in err and "UTF-8" in err and not _files(root)


def test_a_torchtitan_caption_without_model_or_gpus_is_refused(tmp_path, capsys):
    root = tmp_path / "catalog"
    shutil.copytree(REPO / "data/public-record", root / "data/public-record")
    (root / "recipes").mkdir()
    stored = root / "data/public-record/pytorch/torchtitan/benchmarks/llama3_h100_202412_torchtitan.md"
    text = stored.read_text(encoding="utf-8").replace("Llama 3.1 8B model. 8 GPUs.", "A model. Some GPUs.", 1)
    stored.write_text(text, encoding="utf-8")
    manifest = root / "data/public-record/manifest.yaml"
    old = hashlib.sha256((REPO / "data/public-record/pytorch/torchtitan/benchmarks/"
                          "llama3_h100_202412_torchtitan.md").read_bytes()).hexdigest()
    manifest.write_text(manifest.read_text(encoding="utf-8").replace(old, hashlib.sha256(text.encode()).hexdigest()),
                        encoding="utf-8")
    code, _, err = _run(TORCHTITAN, root, capsys)
    assert code == 2 and "llama3_h100_202412_torchtitan.md:25: the caption" in err and not _files(root)


def test_the_committed_record_is_what_the_importers_write(tmp_path, capsys):
    """The entries in recipes/ are exactly a re-run of both importers over the stored copies: none edited by hand."""
    root = tmp_path / "catalog"
    shutil.copytree(REPO / "data/public-record", root / "data/public-record")
    shutil.copytree(REPO / "data/record-sources", root / "data/record-sources")
    shutil.copytree(REPO / "recipes", root / "recipes")
    committed = {p: b for p, b in _files(root).items() if p.name.startswith("record-")}
    for path in committed:
        (root / path).unlink()
    for module in (MEGATRON, TORCHTITAN, _script("import_dgxc_benchmarking"), _script("import_mlperf_training")):
        code, out, _ = _run(module, root, capsys)
        assert code == 0 and "skipped" in out
    assert {p: b for p, b in _files(root).items() if p.name.startswith("record-")} == committed


def test_the_script_itself_exits_2_with_one_line(tmp_path):
    root = _catalog(tmp_path, _summary(GOOD_ROW.replace("| 1029 |", "|")))
    result = subprocess.run([sys.executable, str(REPO / "scripts/import_megatron_bridge.py"), "--root", str(root)],
                            capture_output=True, text=True, env={"PYTHONPATH": str(REPO / "src")}, check=False)
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


def test_markdown_tables_keep_headings_captions_and_lines(tmp_path):
    tables = markdown_tables("## A\n\n**Table 1** caption\nwrapped\n\n| x | y |\n|---|--:|\n| 1 | 2 |\n", tmp_path)
    assert [(t.headings, t.caption, t.header, [(r.line, r.cells) for r in t.rows]) for t in tables] == [
        (("A",), "**Table 1** caption wrapped", ("x", "y"), [(8, ("1", "2"))])]
    with pytest.raises(UserError, match=r":3: table row has 1 cells"):
        markdown_tables("| x | y |\n|---|---|\n| 1 |\n", tmp_path)
