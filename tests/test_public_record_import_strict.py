"""The importers read every cell strictly (record_import.parse_count, parse_figure, parse_precision) and swap the
whole new recipes/ in at once: a hostile cell is exit 2 with one line naming the file, line and cell, and recipes/
is left exactly as it was."""

from __future__ import annotations

import hashlib
import os
import shutil

import pytest
from conftest import REPO
from test_public_record_import import GOOD_ROW, MEGATRON, TORCHTITAN, _catalog, _run, _summary

from openrecipes import atomic
from openrecipes.errors import UserError
from openrecipes.record.importer import parse_count, parse_figure, parse_precision

STORED = "data/public-record/NVIDIA-NeMo/Megatron-Bridge/docs/performance-summary.md:12"
FORTY = "9" * 40

HOSTILE = [
    ("a 40-digit GPU count", GOOD_ROW.replace("| DGX-GB300 | 8 |", f"| DGX-GB300 | {FORTY} |"), "#-GPUs: '9999"),
    ("a 5000-digit GPU count", GOOD_ROW.replace("| DGX-GB300 | 8 |", f"| DGX-GB300 | {'9' * 5000} |"), "#-GPUs:"),
    ("a 40-digit batch", GOOD_ROW.replace("| 512 | 8 | 4096", f"| {FORTY} | 8 | 4096"), "GBS: '9999"),
    ("a 40-digit figure", GOOD_ROW.replace("44544", FORTY), "Tokens / sec / GPU: '9999"),
    ("two GPU counts", GOOD_ROW.replace("| DGX-GB300 | 8 |", "| DGX-GB300 | 256 (512) |"), "#-GPUs: '256 (512)'"),
    ("path characters in the GPU cell", GOOD_ROW.replace("| DGX-GB300 | 8 |", "| DGX-GB300 | 8/../x |"),
     "#-GPUs: '8/../x'"),
    ("path characters in the batch", GOOD_ROW.replace("| 512 | 8 | 4096", "| 512/.. | 8 | 4096"), "GBS: '512/..'"),
    ("no GPUs", GOOD_ROW.replace("| DGX-GB300 | 8 |", "| DGX-GB300 | 0 |"), "#-GPUs: '0' is not a whole number"),
    ("a fraction of a degree", GOOD_ROW.replace("| 4096 | 1 |", "| 4096 | 1.5 |"), "TP: '1.5'"),
    ("NVFP4 on DGX-H100", GOOD_ROW.replace("| DGX-GB300 | 8 | MXFP8", "| DGX-H100 | 8 | NVFP4"),
     "Precision: precision 'NVFP4' (nvfp4) on H100: the GPU has no tensor cores for it"),
    ("MXFP8 on DGX-H100", GOOD_ROW.replace("| DGX-GB300 | 8 | MXFP8", "| DGX-H100 | 8 | MXFP8"),
     "peak_mxfp8_flops"),
    ("a control character", GOOD_ROW.replace("| 8 | 4096", "| 8\x1b[2J | 4096"), "MBS: '8\\x1b[2J'"),
]


def _files(root):
    return {p.relative_to(root): (p.is_symlink(), p.read_bytes() if p.is_file() else None)
            for p in sorted((root / "recipes").rglob("*"))}


def _with_earlier_import(tmp_path, rows):
    root = _catalog(tmp_path, _summary(rows))
    earlier = root / "recipes/qwen3-30b-a3b/gb300/record-mbridge-old.yaml"
    earlier.parent.mkdir(parents=True)
    earlier.write_text("# an earlier import's file\n", encoding="utf-8")
    (root / "recipes/notes.txt").write_text("someone's notes\n", encoding="utf-8")
    return root


@pytest.mark.parametrize(("row", "message"), [h[1:] for h in HOSTILE], ids=[h[0] for h in HOSTILE])
def test_a_hostile_cell_is_one_line_naming_file_line_and_cell_and_changes_nothing(tmp_path, capsys, row, message):
    root = _with_earlier_import(tmp_path, GOOD_ROW + row)
    before = _files(root)
    code, out, err = _run(MEGATRON, root, capsys)
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert err.startswith(f"error: {STORED}: ") and message in err and "Traceback" not in err
    assert len(err) < 400
    assert _files(root) == before and not list(root.glob(".import-*"))


def test_a_torchtitan_caption_with_a_5000_digit_gpu_count_is_one_line(tmp_path, capsys):
    root = tmp_path / "catalog"
    shutil.copytree(REPO / "data/public-record", root / "data/public-record")
    (root / "recipes").mkdir()
    name = "pytorch/torchtitan/benchmarks/llama3_h100_202412_torchtitan.md"
    stored = root / "data/public-record" / name
    old = stored.read_text(encoding="utf-8")
    text = old.replace("Llama 3.1 8B model. 8 GPUs.", f"Llama 3.1 8B model. {'9' * 5000} GPUs.", 1)
    stored.write_text(text, encoding="utf-8")
    manifest = root / "data/public-record/manifest.yaml"
    manifest.write_text(manifest.read_text(encoding="utf-8").replace(
        hashlib.sha256(old.encode()).hexdigest(), hashlib.sha256(text.encode()).hexdigest()), encoding="utf-8")
    code, _, err = _run(TORCHTITAN, root, capsys)
    assert code == 2 and err.count("\n") == 1 and "llama3_h100_202412_torchtitan.md:25: caption: '9999" in err
    assert not list((root / "recipes").rglob("*"))


def test_an_import_that_fails_while_writing_leaves_recipes_as_it_was(tmp_path, capsys, monkeypatch):
    second = GOOD_ROW.replace("| 8 | MXFP8 | 512 | 8 |", "| 16 | MXFP8 | 512 | 4 |")
    root = _with_earlier_import(tmp_path, GOOD_ROW + second)
    before = _files(root)
    real = os.replace
    calls = []

    def failing(*args, **kwargs):
        calls.append(args)
        if len(calls) > 1:
            raise OSError(28, "No space left on device", str(args[1]))
        return real(*args, **kwargs)

    monkeypatch.setattr(os, "replace", failing)  # a disk that fills after the first file

    def no_room(new, old):
        raise OSError(28, "No space left on device", str(old))

    monkeypatch.setattr("openrecipes.record.importer.publish_folder", no_room)
    code, _, err = _run(MEGATRON, root, capsys, "--allow-removals")
    assert code == 2 and err.count("\n") == 1
    assert _files(root) == before and not list(root.glob(".import-*"))


def test_a_fifo_in_recipes_is_refused_and_left_alone(tmp_path, capsys):
    root = _with_earlier_import(tmp_path, GOOD_ROW)
    os.mkfifo(root / "recipes/qwen3-30b-a3b/gb300/record-mbridge-fifo.yaml")
    before = _files_no_read(root)
    code, _, err = _run(MEGATRON, root, capsys, "--allow-removals")
    assert code == 2 and "a FIFO" in err and err.count("\n") == 1
    assert _files_no_read(root) == before


def _files_no_read(root):
    return sorted(str(p.relative_to(root)) for p in (root / "recipes").rglob("*"))


def test_a_good_import_keeps_every_other_file_of_recipes_and_its_links(tmp_path, capsys):
    root = _with_earlier_import(tmp_path, GOOD_ROW)
    (root / "recipes/link.txt").symlink_to("notes.txt")
    code, out, _ = _run(MEGATRON, root, capsys, "--allow-removals")
    assert code == 0 and "wrote 1 entries" in out
    assert (root / "recipes/notes.txt").read_text(encoding="utf-8") == "someone's notes\n"
    assert os.readlink(root / "recipes/link.txt") == "notes.txt"
    assert not (root / "recipes/qwen3-30b-a3b/gb300/record-mbridge-old.yaml").exists()  # no row makes it any more
    assert not list(root.glob(".import-*"))


@pytest.mark.parametrize("exchange", [True, False], ids=["renameat2", "three-renames"])
def test_swap_folders_puts_the_new_tree_in_place_and_the_old_one_beside(tmp_path, monkeypatch, exchange):
    old, new = tmp_path / "recipes", tmp_path / "staged"
    old.mkdir()
    (old / "a").write_text("old\n")
    new.mkdir()
    (new / "b").write_text("new\n")
    if not exchange:
        class NoExchange:
            def __init__(self, *args, **kwargs):
                pass
        monkeypatch.setattr(atomic.ctypes, "CDLL", NoExchange)
    atomic.swap_folders(new, old)
    assert sorted(os.listdir(old)) == ["b"] and sorted(os.listdir(new)) == ["a"]
    assert sorted(os.listdir(tmp_path)) == ["recipes", "staged"]


def test_the_cell_parsers(tmp_path):
    assert parse_count("1,024", "f:1: #-GPUs") == 1024 and parse_count("8[^a]", "w") == 8
    assert parse_count("0", "w", least=0) == 0
    assert parse_figure("6,667", "w") == 6667 and parse_figure("597.3", "w") == 597.3
    for cell in ("", "-1", "1e3", "0x10", "١", "８", "1 024", "1,02", FORTY, "True", "n/a"):
        with pytest.raises(UserError, match="w: '"):
            parse_count(cell, "w")
    for cell in ("0", "-0.5", "nan", "inf", "1e400", FORTY + ".5", "1.", ".5"):
        with pytest.raises(UserError, match="w: '"):
            parse_figure(cell, "w")
    assert parse_precision("FP8", "B200", "w", {"FP8": "fp8"}) == "fp8"
    with pytest.raises(UserError, match="unknown precision 'FP6'; known: FP8"):
        parse_precision("FP6", "B200", "w", {"FP8": "fp8"})
    with pytest.raises(UserError, match="unknown precision"):
        parse_precision("X", "B200", "w", {"X": "fp7"})
    with pytest.raises(UserError, match="unknown GPU type 'H900'"):
        parse_precision("FP8", "H900", "w", {"FP8": "fp8"})
    with pytest.raises(UserError, match="gives A100 no peak_fp8_flops"):
        parse_precision("FP8", "A100", "w", {"FP8": "fp8"})


def test_a_catalog_without_recipes_gets_one_and_a_linked_recipes_is_refused(tmp_path, capsys):
    root = _catalog(tmp_path, _summary(GOOD_ROW))
    (root / "recipes").rmdir()
    assert _run(MEGATRON, root, capsys)[0] == 0 and len(list((root / "recipes").rglob("*.yaml"))) == 1
    elsewhere = tmp_path / "elsewhere"
    (root / "recipes").rename(elsewhere)
    (root / "recipes").symlink_to(elsewhere)
    before = sorted(p.name for p in elsewhere.rglob("*"))
    code, _, err = _run(MEGATRON, root, capsys)
    assert code == 2 and "is a symbolic link" in err and sorted(p.name for p in elsewhere.rglob("*")) == before
    assert (root / "recipes").is_symlink()
