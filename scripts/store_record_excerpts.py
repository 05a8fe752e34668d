#!/usr/bin/env python3
"""Store the excerpts the dgxc-benchmarking and MLPerf Training importers read, from local git copies of the
public repositories (bare clones are enough: files are read with `git show <commit>:<path>`).

    python scripts/store_record_excerpts.py dgxc GITDIR
    python scripts/store_record_excerpts.py mlperf GITDIR VERSION

An excerpt keeps only the lines the importer reads, each as "<line>: <text>" exactly as the file writes it, under a
header naming the repository, path, commit and the whole file's sha256 (data/record-sources/README.md). The
importers and `openrecipes audit` read the excerpts only, never the network.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "data" / "record-sources"
# dgxc-benchmarking: the first release tag of each distinct Expected Performance table of the Llama 3.1 READMEs and
# of the models the catalog has no card for (their cells are reported as not imported).
DGXC_TAGS = ("v24.11.1", "v25.01.1", "v25.02", "v25.04", "v25.05", "v25.05.01", "v25.05.05")
DGXC_FILES = re.compile(r"^(llama3\.1|nemotron|grok1|nemo_megatron)/README[^/]*\.md$")
# MLPerf: the MLLOG keys the importer reads and the config variables that hold the layout.
MLLOG_KEYS = ("global_batch_size", "max_sequence_length", "submission_benchmark", "submission_division",
              "submission_org", "submission_platform", "submission_status", "block_start", "block_stop", "eval_start",
              "eval_accuracy", "gradient_accumulation_steps")
MLPERF_BENCHMARKS = ("llama31_8b", "llama31_405b")
KEPT_BLOCKS = 6  # the first block is warm-up; five more measure the run and keep the excerpts small


def _first_blocks(wanted: re.Pattern[str]):
    """A line filter keeping the wanted MLLOG lines until the KEPT_BLOCKS-th eval_accuracy line."""
    evaluations = 0

    def keep(line: str) -> bool:
        nonlocal evaluations
        if evaluations >= KEPT_BLOCKS or not wanted.search(line):
            return False
        evaluations += '"key": "eval_accuracy"' in line
        return True
    return keep


CONFIG_LINE = re.compile(r"^\s*(export\s+)?[A-Z][A-Z0-9_]*=|^\s*(source|\.)\s")
SYSTEM_KEYS = re.compile(r'^\s*"(accelerator_model_name|accelerator_memory_capacity|accelerators_per_node|'
                         r'number_of_nodes|submitter|division|system_name|framework)"\s*:')


def _git(gitdir: str, *args: str) -> str:
    return subprocess.run(["git", "-C", gitdir, *args], check=True, capture_output=True, text=True).stdout


def _write(dest: Path, repository: str, path: str, commit: str, text: str, keep, note: str) -> None:
    header = [f"# origin: {repository} {path}", f"# commit: {commit}",
              f"# file sha256: {hashlib.sha256(text.encode('utf-8')).hexdigest()}", f"# kept: {note}"]
    body = [f"{i}: {line}" for i, line in enumerate(text.splitlines(), start=1) if keep(line)]
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text("\n".join(header + body) + "\n", encoding="utf-8")


def _dgxc_line(line: str) -> bool:
    """A table line, or a system label such as '**GB200**:' naming the GPUs of the layout tables under it."""
    return line.lstrip().startswith("|") or bool(re.match(r"^\*\*[A-Z0-9]+\*\*:", line))


def store_dgxc(gitdir: str) -> None:
    for tag in DGXC_TAGS:
        commit = _git(gitdir, "rev-list", "-n1", tag).strip()
        for path in _git(gitdir, "ls-tree", "-r", "--name-only", commit).splitlines():
            if DGXC_FILES.match(path):
                text = _git(gitdir, "show", f"{commit}:{path}")
                _write(OUT / "dgxc-benchmarking" / tag / f"{path}.txt", "NVIDIA/dgxc-benchmarking", path, commit,
                       text, _dgxc_line, f"every table line and system label (release {tag})")


def store_mlperf(gitdir: str, version: str) -> None:
    commit = _git(gitdir, "rev-parse", "HEAD").strip()
    repository = f"mlcommons/training_results_{version}"
    files = _git(gitdir, "ls-tree", "-r", "--name-only", commit).splitlines()
    wanted = re.compile(r'"key": "(' + "|".join(MLLOG_KEYS) + r')"')
    for path in files:
        parts = path.split("/")
        if len(parts) == 4 and parts[1] == "results" and parts[2] in MLPERF_BENCHMARKS or (
                len(parts) == 5 and parts[1] == "results" and parts[3] in MLPERF_BENCHMARKS
                and re.fullmatch(r"result_\d+\.txt", parts[4])):
            text = _git(gitdir, "show", f"{commit}:{path}")
            _write(OUT / "mlperf-training" / version / f"{path}.txt", repository, path, commit, text,
                   _first_blocks(wanted), f"the MLLOG lines of the keys the importer reads, up to the "
                   f"{KEPT_BLOCKS}th eval_accuracy (the first {KEPT_BLOCKS} training blocks)")
        elif (len(parts) >= 5 and parts[1] == "benchmarks" and parts[2] in MLPERF_BENCHMARKS
              and re.fullmatch(r"config_.*\.sh", parts[-1])):
            text = _git(gitdir, "show", f"{commit}:{path}")
            _write(OUT / "mlperf-training" / version / f"{path}.txt", repository, path, commit, text,
                   lambda line: bool(CONFIG_LINE.match(line)), "every variable assignment and sourced file")
    systems = {f"{parts[0]}/systems/{parts[2]}.json" for parts in (p.split("/") for p in files)
               if len(parts) == 5 and parts[1] == "results" and parts[3] in MLPERF_BENCHMARKS}
    for path in sorted(systems & set(files)):
        text = _git(gitdir, "show", f"{commit}:{path}")
        _write(OUT / "mlperf-training" / version / f"{path}.txt", repository, path, commit, text,
               lambda line: bool(SYSTEM_KEYS.match(line)), "the system's accelerators, nodes and submitter")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "dgxc":
        store_dgxc(sys.argv[2])
    elif len(sys.argv) == 4 and sys.argv[1] == "mlperf":
        store_mlperf(sys.argv[2], sys.argv[3])
    else:
        sys.exit("usage: store_record_excerpts.py dgxc GITDIR | mlperf GITDIR VERSION")
