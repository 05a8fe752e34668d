"""`openrecipes probe`: a tiny real run on the CPU writes a probe file its tables read; the tables' formulas on known
seconds; a probe file in the catalog audited (re-derived, held to its part's datasheet); and every bad probe file
or option refused with one line naming the file and the entry, nothing written."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, openrecipes

from openrecipes.catalog.hardware import load_reference_tables
from openrecipes.errors import UserError
from openrecipes.probe.file import ProbeFile, part_of_device, probe_text, read_probe
from openrecipes.probe.tables import tables, tables_for

H200 = "H200-SXM-141GB"
GIB = 2**30


def probe_data(part: str = H200, **changes: object) -> dict:
    """A full probe of `part` with round seconds: a 2 x 2 x 2 BF16 GEMM grid, two attention shapes, two copies,
    each collective at two sizes among 8 GPUs."""
    data: dict = {
        "openrecipes_probe": 1, "part": part, "device": "NVIDIA H200", "driver": "570.86.15", "torch": "2.13.0",
        "cuda": "12.8", "date": "2026-12-04", "gpus": 8, "quick": False,
        "gemm": [{"m": m, "n": n, "k": k, "dtype": "bf16", "seconds": [0.002, 0.001, 0.004]}
                 for m in (1024, 4096) for n in (1024, 4096) for k in (1024, 4096)],
        "attention": [{"seq": seq, "heads": 16, "head_dim": 128, "batch": 16384 // seq, "dtype": "bf16",
                       "seconds": [0.01]} for seq in (1024, 4096)],
        "copies": [{"size_bytes": size, "seconds": [0.5, 0.5]} for size in (GIB // 2, GIB)],
        "collectives": [{"kind": kind, "message_bytes": size, "gpus": 8, "seconds": [0.01]}
                        for kind in ("all_reduce", "all_gather", "reduce_scatter", "all_to_all")
                        for size in (GIB // 4, GIB)],
    }
    data.update(changes)
    return data


def write(path: Path, data: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(probe_text(ProbeFile.model_validate(data)))
    return path


def catalog(tmp_path: Path) -> Path:
    """A scratch catalog: no recipes, the bundled hardware tables, an empty probes/ folder."""
    shutil.copytree(REPO / "hardware", tmp_path / "hardware", ignore=shutil.ignore_patterns("probes"))
    (tmp_path / "recipes").mkdir()
    (tmp_path / "hardware/probes").mkdir()
    return tmp_path


def test_a_tiny_cpu_probe_writes_a_file_its_tables_read(tmp_path, torch):
    out = tmp_path / "hardware/probes/cpu.json"  # its folders made, as a catalog's first probe needs
    done = openrecipes("probe", "--out", out, "--device", "cpu", "--quick")
    assert done.returncode == 0, done.stderr
    assert f"wrote {out}: cpu" in done.stdout
    probe = read_probe(out, load_reference_tables())
    assert (probe.part, probe.quick, probe.gpus, probe.torch) == ("cpu", True, 1, torch.__version__)
    derived = tables(probe, None)
    assert len(derived.gemm) == 8 and len(derived.attention) == 4 and len(derived.copies) == 2
    assert all(p.flops_per_s > 0 and p.efficiency is None for p in derived.gemm)  # a CPU has no peak in gpus.yaml
    assert derived.gemm_precisions == frozenset() and derived.hbm_bytes_per_s > 0
    assert derived.attention_s(seq=128, heads=2, head_dim=32, batch=2) > 0
    assert "0 collectives" in done.stdout  # collectives only under torchrun with several ranks


def test_a_fake_timer_run_records_every_repeat_and_the_tables_follow(tmp_path, torch):
    """The runner with a timer that runs nothing and answers known seconds: the file holds them as timed, and the
    tables are exactly the formulas over their median."""
    from openrecipes.probe import run

    world = run.World(rank=0, size=1, device="cpu")
    timings = run.measure(run.steps(run.QUICK, world, fp8=False), lambda operation: [3e-3, 1e-3, 2e-3],
                          lambda label: None)
    host = run.Machine("a CPU", None, torch.__version__, None)
    out = tmp_path / "fake.json"
    out.write_text(probe_text(run.probe_file("cpu", host, world, True, timings)))
    derived = tables(read_probe(out, load_reference_tables()), None)
    assert [p.flops_per_s for p in derived.gemm] == [2 * p.m * p.n * p.k / 2e-3 for p in derived.gemm]
    assert {(p.m, p.n, p.k) for p in derived.gemm} == {(m, n, k) for m in (64, 128) for n in (64, 128)
                                                       for k in (64, 128)}
    assert [c.bytes_per_s for c in derived.copies] == [2 * 2**20 / 2e-3, 2 * 4 * 2**20 / 2e-3]


def test_the_tables_are_the_formulas_over_the_median_repeat():
    reference = load_reference_tables()
    derived = tables(ProbeFile.model_validate(probe_data()), reference.variants[H200])
    gemm = next(p for p in derived.gemm if (p.m, p.n, p.k) == (4096, 4096, 4096))
    assert gemm.seconds == 0.002
    assert gemm.flops_per_s == 2 * 4096**3 / 0.002
    assert gemm.efficiency == 2 * 4096**3 / 0.002 / 989.0e12  # the H200's dense BF16 peak
    attention = next(p for p in derived.attention if p.seq == 4096)
    assert attention.flops_per_s == pytest.approx(6 * 4 * 16 * 4096**2 * 128 / 0.01, rel=1e-12)  # 6·b·h·s²·d
    assert derived.hbm_bytes_per_s == 2 * GIB / 0.5  # a copy reads and writes its size
    bus = {(p.kind, p.message_bytes): p.bus_bytes_per_s for p in derived.collectives}
    assert bus["all_reduce", GIB] == pytest.approx(GIB / 0.01 * 2 * 7 / 8, rel=1e-12)  # nccl-tests: 2(n-1)/n
    for kind in ("all_gather", "reduce_scatter", "all_to_all"):
        assert bus[kind, GIB] == pytest.approx(GIB / 0.01 * 7 / 8, rel=1e-12)  # (n-1)/n


def test_lookups_interpolate_in_log_shape_and_clamp_to_the_measured_range():
    data = probe_data()
    for entry in data["gemm"]:  # 100 TFLOP/s at m = 1024, 200 at m = 4096, whatever n and k
        entry["seconds"] = [2 * entry["m"] * entry["n"] * entry["k"] / (1e14 if entry["m"] == 1024 else 2e14)]
    derived = tables(ProbeFile.model_validate(data), load_reference_tables().variants[H200])
    low, high = derived.gemm_efficiency(1024, 1024, 1024, "bf16"), derived.gemm_efficiency(4096, 1024, 1024, "bf16")
    assert (low, high) == (pytest.approx(1e14 / 989e12), pytest.approx(2e14 / 989e12))
    assert derived.gemm_efficiency(2048, 1024, 1024, "bf16") == pytest.approx((low + high) / 2)  # halfway in log m
    assert derived.gemm_efficiency(100, 10, 10**6, "bf16") == low  # below and above the grid: its edges
    assert derived.gemm_efficiency(10**6, 1024, 1024, "bf16") == high
    with pytest.raises(KeyError):
        derived.gemm_efficiency(1024, 1024, 1024, "fp8")  # not measured
    assert derived.attention_s(4096, 16, 128, 4) == pytest.approx(0.01)  # a measured shape: its own seconds
    assert derived.attention_s(4096, 32, 128, 4) == pytest.approx(0.02)  # twice the heads, twice the FLOPs
    assert derived.collective_bytes_per_s("all_reduce", GIB // 2, 8) == pytest.approx(GIB / 4 / 0.01 * 1.75 * 2.5)
    assert derived.collective_bytes_per_s("all_reduce", GIB, 4) is None  # no group of 4 measured


def test_the_planner_reads_a_parts_filed_probe(tmp_path):
    root = catalog(tmp_path)
    assert tables_for(H200, root) is None
    write(root / f"hardware/probes/{H200}.json", probe_data())
    found = tables_for(H200, root)
    assert found is not None and found.part == H200 and found.gemm_precisions == {"bf16"}
    write(root / "hardware/probes/B200-SXM-180GB.json", probe_data())  # an H200's probe asked for as a B200's
    with pytest.raises(UserError, match="measured 'H200-SXM-141GB', not 'B200-SXM-180GB'"):
        tables_for("B200-SXM-180GB", root)


def test_audit_re_derives_a_filed_probe_and_holds_it_to_its_datasheet(tmp_path):
    root = catalog(tmp_path)
    path = write(root / f"hardware/probes/{H200}.json", probe_data())
    done = openrecipes("audit", "--catalog", root, "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout) == [{"path": f"hardware/probes/{H200}.json", "evidence": "re-derived", "ok": True,
                                        "findings": []}]
    too_fast = probe_data(quick=True)
    too_fast["gemm"][-1]["seconds"] = [1e-6]  # 4096³ in a microsecond: far past the H200's peak
    write(path, too_fast)
    done = openrecipes("audit", "--catalog", root, path, "--json")
    assert done.returncode == 1
    findings = json.loads(done.stdout)[0]["findings"]
    assert [f["field"] for f in findings] == ["quick", "gemm[7]"]
    assert "x the part's dense peak" in findings[1]["message"]


def bad(tmp_path: Path, text: str, name: str = H200) -> str:
    """audit's answer to a filed probe file holding `text`: exit 2 and one line, or the test fails."""
    root = catalog(tmp_path)
    (root / f"hardware/probes/{name}.json").write_text(text)
    done = openrecipes("audit", "--catalog", root)
    assert (done.returncode, done.stdout) == (2, ""), done.stdout + done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("error: ")
    return done.stderr


def entry_replaced(old: str, new: str) -> str:
    text = probe_text(ProbeFile.model_validate(probe_data()))
    assert old in text
    return text.replace(old, new, 1)


@pytest.mark.parametrize("seconds, says", [("NaN", "finite number"), ("0.0", "greater than 0"),
                                           ("-0.002", "greater than 0"), ("Infinity", "finite number")])
def test_a_timing_that_is_not_a_positive_number_names_the_file_line_and_entry(tmp_path, seconds, says):
    text = entry_replaced('"seconds": [0.002, 0.001, 0.004]}', f'"seconds": [0.002, {seconds}, 0.004]}}')
    error = bad(tmp_path, text)
    assert f"{H200}.json:12: gemm[0].seconds[1]: " in error and says in error and "openrecipes probe" in error


def test_a_probe_filed_under_another_part_is_refused(tmp_path):
    error = bad(tmp_path, probe_text(ProbeFile.model_validate(probe_data())), name="B200-SXM-180GB")
    assert "B200-SXM-180GB.json:3: part: the probe measured 'H200-SXM-141GB', not 'B200-SXM-180GB'" in error


def test_an_unknown_part_lists_the_known_ones(tmp_path):
    error = bad(tmp_path, probe_text(ProbeFile.model_validate(probe_data(part="Z100"))), name="Z100")
    assert "unknown part 'Z100'; known: H100-SXM5-80GB, " in error and "docs/probe.md" in error


@pytest.mark.parametrize("text, says", [
    ('{"openrecipes_probe": 1,\n "part": ', ":2: not JSON"),
    ("[1, 2]", "Input should be a valid dictionary"),
    ('{"openrecipes_probe": 1, "openrecipes_probe": 1}', "'openrecipes_probe' is written twice"),
])
def test_a_malformed_probe_file_is_one_line(tmp_path, text, says):
    assert says in bad(tmp_path, text)


def test_shapes_that_are_not_a_full_grid_are_refused(tmp_path):
    data = probe_data()
    data["gemm"][3] = dict(data["gemm"][2])  # measured twice; one shape missing
    error = bad(tmp_path, probe_text(ProbeFile.model_validate(data)))
    assert ":15: gemm[3]: measures (1024, 4096, 1024) again (first at entry 2)" in error
    del data["gemm"][3]
    error = bad(tmp_path / "hole", probe_text(ProbeFile.model_validate(data)))
    assert ":18: gemm[6]: the grid lacks (1024, 4096, 4096)" in error


@pytest.mark.slow
def test_under_torchrun_every_collective_is_timed_among_the_ranks(tmp_path, torch):
    """Two CPU ranks (gloo): rank 0 writes the file, with each collective at each size among 2 ranks."""
    out = tmp_path / "two.json"
    done = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "-m", "openrecipes",
                           "probe", "--out", str(out), "--device", "cpu", "--quick"], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    assert done.returncode == 0, done.stderr
    derived = tables(read_probe(out, load_reference_tables()), None)
    assert {(p.kind, p.message_bytes, p.gpus) for p in derived.collectives} == {
        (kind, size, 2) for kind in ("all_reduce", "all_gather", "reduce_scatter", "all_to_all")
        for size in (64 * 1024, 2**20)}
    assert derived.collective_bytes_per_s("all_gather", 2**20, 2) > 0


def test_the_part_of_a_gpu_is_its_reported_name_or_the_one_asked():
    reference = load_reference_tables()
    assert part_of_device("NVIDIA H200", None, reference) == H200
    assert part_of_device("NVIDIA H200", H200, reference) == H200
    with pytest.raises(UserError, match="reports itself as 'NVIDIA H200', the name of H200-SXM-141GB, not of B200"):
        part_of_device("NVIDIA H200", "B200-SXM-180GB", reference)
    with pytest.raises(UserError, match="unknown part 'Z100'; known: H100-SXM5-80GB"):
        part_of_device("NVIDIA H200", "Z100", reference)
    with pytest.raises(UserError, match="no part of hardware/gpus.yaml is reported as 'NVIDIA H999'"):
        part_of_device("NVIDIA H999", None, reference)


@pytest.mark.parametrize("options, says", [
    (("--device", "cpu"), "--device cpu: the full grid takes hours on a CPU; add --quick"),
    (("--device", "cpu", "--quick", "--part", H200), "--part: a CPU probe is of the part 'cpu'"),
    (("--device", "gpu"), "Invalid value for '--device'"),
])
def test_probe_options_that_cannot_run_write_nothing(tmp_path, options, says):
    out = tmp_path / "probe.json"
    done = openrecipes("probe", "--out", out, *options)
    assert done.returncode == 2 and says in done.stderr and done.stderr.count("\n") == 1
    assert not out.exists()


def test_probe_never_writes_over_a_file_it_did_not_write_nor_under_a_file(tmp_path):
    mine = tmp_path / "notes.json"
    mine.write_text('{"mine": true}\n')
    done = openrecipes("probe", "--out", mine, "--device", "cpu", "--quick")
    assert done.returncode == 2 and "not a file this command wrote" in done.stderr
    assert mine.read_text() == '{"mine": true}\n'
    done = openrecipes("probe", "--out", mine / "probes/cpu.json", "--device", "cpu", "--quick")
    assert done.returncode == 2 and "Not a directory" in done.stderr and done.stderr.count("\n") == 1


def test_the_written_file_reads_back_as_written():
    probe = ProbeFile.model_validate(probe_data())
    text = probe_text(probe)
    assert json.loads(text) == probe_data() and text.startswith('{\n  "openrecipes_probe": 1,\n')


def test_a_gpu_that_runs_out_of_memory_is_told_in_one_line(torch):
    from openrecipes.probe import run

    def too_big(time_it):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 512.00 MiB")

    with pytest.raises(UserError, match="GEMM bf16 16384x16384x16384: the GPU ran out of memory; free it"):
        run.measure([run.Step("GEMM bf16 16384x16384x16384", too_big)], lambda operation: [1.0], lambda label: None)
