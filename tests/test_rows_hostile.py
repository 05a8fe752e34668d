"""Bad options, broken tokenizer files, no disk room, kills and concurrent builds: clear errors, whole outputs."""

from __future__ import annotations

import hashlib
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import openrecipes

from openrecipes.errors import UserError
from openrecipes.rows import build, demo, publish, room
from openrecipes.rows.build import BuildRequest, build_rows
from openrecipes.rows.manifest import RowsManifest

FIXTURES = Path(__file__).parent / "fixtures" / "rows"


@pytest.fixture(scope="module")
def dialogs(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("dialogs") / "conversations.jsonl"
    demo.write_tulu_jsonl(demo.corpus_dialogs(), 3, path)
    return path


def _assert_bad_input(run: subprocess.CompletedProcess, *phrases: str) -> None:
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
    for phrase in phrases:
        assert phrase in run.stderr


def test_out_of_range_options_are_refused_before_any_work(qwen3, tmp_path):
    common = ["--conversations", FIXTURES / "conversations.jsonl", "--tokenizer", qwen3, "--chat-format", "qwen3"]
    for flag, value in (("--seed", "-1"), ("--rows", "0"), ("--row-tokens", "0"), ("--workers", "-2"),
                        ("--rows", "1000000000")):
        settings = {"--seed": "1", "--rows": "1", **{flag: value}}
        run = openrecipes("rows", "build", *common, "--out", tmp_path / "o",
                          *[x for item in settings.items() for x in item])
        _assert_bad_input(run, flag)
    assert not (tmp_path / "o").exists()
    with pytest.raises(UserError, match="--seed: -1 is out of range"):
        build_rows(BuildRequest(FIXTURES / "conversations.jsonl", qwen3, "qwen3", 32, 1, -1, tmp_path / "o"))


@pytest.mark.parametrize("content, phrase", [(b"{not json", "line 1: not JSON"),
                                             (b'{"eos_token": "\xff\xfe"}', "not UTF-8"),
                                             (b'["a list"]', "not a JSON object")])
def test_a_broken_tokenizer_config_is_one_line(qwen3, tmp_path, content, phrase):
    tokenizer = tmp_path / "tokenizer"
    tokenizer.mkdir()
    (tokenizer / "tokenizer.json").write_bytes((qwen3 / "tokenizer.json").read_bytes())
    (tokenizer / "tokenizer_config.json").write_bytes(content)
    run = openrecipes("rows", "build", "--conversations", FIXTURES / "conversations.jsonl", "--tokenizer", tokenizer,
               "--chat-format", "template", "--rows", "1", "--seed", "1", "--out", tmp_path / "o", "--workers", "0")
    _assert_bad_input(run, "tokenizer_config.json", phrase)
    assert run.stderr.strip().count("\n") == 0


class PoolStarted(Exception):
    """Raised in place of starting a worker pool: what a test wants to know is only whether, and how big."""


def _record_pools(monkeypatch) -> list[int]:
    pools: list[int] = []

    def context(method):
        def pool(processes, *arguments):
            pools.append(processes)
            raise PoolStarted

        return SimpleNamespace(Pool=pool)

    monkeypatch.setattr(build.multiprocessing, "get_context", context)
    return pools


def test_workers_are_capped_at_the_cores(qwen3, tmp_path, monkeypatch):
    pools = _record_pools(monkeypatch)
    monkeypatch.setattr(build.os, "cpu_count", lambda: 1)
    with pytest.raises(PoolStarted):
        build_rows(BuildRequest(FIXTURES / "conversations.jsonl", qwen3, "qwen3", 32, 2, 1, tmp_path, workers=64))
    assert pools == [1]


def test_a_chat_format_the_exported_tokenizer_lacks_fails_before_any_worker_starts(qwen3, tmp_path, monkeypatch):
    pools = _record_pools(monkeypatch)
    with pytest.raises(UserError, match=re.escape("no <|start|> token; --chat-format gpt_oss needs its model's")):
        build_rows(BuildRequest(FIXTURES / "conversations.jsonl", qwen3, "gpt_oss", 32, 2, 1, tmp_path, workers=2))
    assert pools == []


def test_a_build_that_cannot_fit_on_the_disk_stops_before_work(qwen3, tmp_path, monkeypatch):
    monkeypatch.setattr(room.shutil, "disk_usage", lambda path: SimpleNamespace(free=10 << 20))
    with pytest.raises(UserError, match=r"need up to .* GiB on disk and 0.0 GiB are free"):
        build_rows(BuildRequest(FIXTURES / "conversations.jsonl", qwen3, "qwen3", 8192, 100_000, 1, tmp_path / "o"))
    assert not (tmp_path / "o").exists()


@pytest.mark.slow
def test_a_demo_too_large_for_the_disk_is_refused_before_the_corpus_is_written(tmp_path):
    run = openrecipes("rows", "demo", "--chat-format", "qwen3", "--rows", "50000000", "--out", tmp_path)
    _assert_bad_input(run, "GiB on disk", "pass fewer --rows")
    assert not (tmp_path / "conversations.jsonl").exists() and not (tmp_path / "rows.parquet").exists()


def test_the_demo_corpus_is_written_whole_or_not_at_all(tmp_path, monkeypatch):
    path = tmp_path / "conversations.jsonl"
    path.write_text("old\n")
    lines = demo._epoch_lines

    def interrupted(dialogs, epoch):
        if epoch == 1:
            raise KeyboardInterrupt
        return lines(dialogs, epoch)

    monkeypatch.setattr(demo, "_epoch_lines", interrupted)
    with pytest.raises(KeyboardInterrupt):
        demo.write_tulu_jsonl(demo.corpus_dialogs(), 3, path)
    assert [p.name for p in tmp_path.iterdir()] == ["conversations.jsonl"] and path.read_text() == "old\n"


def _child(qwen3: Path, dialogs: Path, out: Path, seed: int, kill_at: str = "") -> subprocess.Popen:
    """A build in its own process; kill_at="before-swap"/"after-swap" kills it at the swap that publishes."""
    script = f"""
import os, signal
from pathlib import Path
from openrecipes import atomic
from openrecipes.rows.build import BuildRequest, build_rows
from openrecipes.rows.manifest import RowsManifest
swap = atomic.swap_folders
def dying_swap(new, old):
    if {kill_at!r} == "before-swap":
        os.kill(os.getpid(), signal.SIGKILL)
    swap(new, old)
    if {kill_at!r} == "after-swap":
        os.kill(os.getpid(), signal.SIGKILL)
atomic.swap_folders = dying_swap
build_rows(BuildRequest(Path({str(dialogs)!r}), Path({str(qwen3)!r}), "qwen3", 256, 60, {seed}, Path({str(out)!r}),
                        workers=1))
"""
    return subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})


def _published(out: Path) -> str:
    """The rows_sha256 of the pair a reader sees, after checking rows.parquet is the manifest's file."""
    manifest = RowsManifest.read(out / "manifest.json")
    assert hashlib.sha256((out / "rows.parquet").read_bytes()).hexdigest() == manifest.parquet_sha256
    return manifest.rows_sha256


@pytest.mark.slow
def test_a_killed_build_leaves_the_old_or_the_new_complete_output(qwen3, dialogs, tmp_path):
    out = tmp_path / "out"
    old = build_rows(BuildRequest(dialogs, qwen3, "qwen3", 256, 60, 1, out, workers=1)).rows_sha256
    started = time.monotonic()
    finished = _child(qwen3, dialogs, tmp_path / "timing", seed=2)
    assert finished.wait(timeout=300) == 0, finished.stderr.read()
    duration = time.monotonic() - started
    new = _published(tmp_path / "timing")
    rng = random.Random(19)
    outcomes = []
    for kill_at in ["before-swap", "after-swap", *[""] * 8]:
        child = _child(qwen3, dialogs, out, seed=2, kill_at=kill_at)
        if not kill_at:
            time.sleep(rng.uniform(0.2, duration))
            child.send_signal(signal.SIGKILL)
        child.wait(timeout=300)
        outcomes.append(_published(out))
        assert outcomes[-1] in (old, new)
    assert outcomes[:2] == [old, new]  # killed just before and just after the publishing rename
    assert _child(qwen3, dialogs, out, seed=2).wait(timeout=300) == 0
    assert _published(out) == new
    assert sorted(path.name for path in out.iterdir()) == [
        ".rows.lock", "manifest.json", "rows-current", "rows.parquet"]  # temporaries cleaned


def test_a_second_build_into_the_same_folder_is_refused_while_one_runs(qwen3, tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", f"""
import time
from pathlib import Path
from openrecipes.rows.publish import locked
with locked(Path({str(tmp_path)!r})):
    print("held", flush=True)
    time.sleep(120)
"""], stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(UserError, match="another rows build is writing this folder"):
            build_rows(BuildRequest(FIXTURES / "conversations.jsonl", qwen3, "qwen3", 32, 2, 1, tmp_path))
    finally:
        holder.kill()
        holder.wait()
    build_rows(BuildRequest(FIXTURES / "conversations.jsonl", qwen3, "qwen3", 32, 2, 1, tmp_path))  # lock gone


@pytest.mark.slow  # two build processes; the quick loop has the lock they race for in the test above
def test_concurrent_builds_never_mix(qwen3, dialogs, tmp_path):
    children = [_child(qwen3, dialogs, tmp_path, seed=seed) for seed in (3, 4)]
    codes = [child.wait(timeout=300) for child in children]
    errors = [child.stderr.read().decode() for child in children]
    assert 0 in codes
    assert all(code == 0 or "another rows build" in error for code, error in zip(codes, errors, strict=True))
    _published(tmp_path)


@pytest.mark.parametrize("layout", ["plain files", "rows-current a link into .rows-versions"])
def test_a_folder_an_older_build_wrote_takes_the_new_pair_whole(tmp_path, layout):
    if layout == "plain files":
        (tmp_path / "rows.parquet").write_text("old rows\n")
        (tmp_path / "manifest.json").write_text("old manifest\n")
    else:
        version = tmp_path / ".rows-versions/0123"
        version.mkdir(parents=True)
        (version / "rows.parquet").write_text("old rows\n")
        (version / "manifest.json").write_text("old manifest\n")
        (tmp_path / "rows-current").symlink_to(".rows-versions/0123")
        for name in publish.FILES:
            (tmp_path / name).symlink_to(f"rows-current/{name}")
    with publish.locked(tmp_path):
        assert (tmp_path / "rows.parquet").read_text() == "old rows\n"  # the lock's clean-up keeps the published pair
        staged = publish.stage(tmp_path)
        (staged / "rows.parquet").write_text("new rows\n")
        (staged / "manifest.json").write_text("new manifest\n")
        publish.publish(tmp_path, staged)
    assert (tmp_path / "rows.parquet").read_text() == "new rows\n"
    assert (tmp_path / "manifest.json").read_text() == "new manifest\n"
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        ".rows.lock", "manifest.json", "rows-current", "rows.parquet"]
