"""Shared test helpers: the repository root, `openrecipes` run in this process, and a way to write a mutated copy of a
seed recipe."""

from __future__ import annotations

import fcntl
import hashlib
import importlib.metadata
import json
import os
import pickle
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import pytest
import yaml
from hypothesis import settings
from hypothesis.database import DirectoryBasedExampleDatabase
from typer.testing import CliRunner

REPO = Path(__file__).resolve().parents[1]
GLM_16K = REPO / "recipes/glm-5.2-744b-a40b/b200/attune-tp4-pp2-cp4-mt16k.yaml"
GPTOSS_1 = REPO / "recipes/gpt-oss-20b/h200/attune-tp1-pp1-ep4.yaml"
T = TypeVar("T")

# Hypothesis: no deadline in either profile (a shared CPU makes one example's time noise, not a finding). CI
# (`pytest --hypothesis-profile ci`, as .ci/run runs it) runs every test at full strength, keeps no examples,
# derandomizes so a run can be repeated, and prints the blob that reproduces a failure. Locally (the dev profile) a
# test runs a fifth of its examples, so the quick loop stays quick, and the failing examples are kept in the ignored
# .hypothesis/ of the repository, wherever pytest starts, and replayed first.
CI_EXAMPLES = 100
settings.register_profile("dev", deadline=None, database=DirectoryBasedExampleDatabase(REPO / ".hypothesis/examples"),
                          max_examples=CI_EXAMPLES // 5)
settings.register_profile("ci", deadline=None, database=None, derandomize=True, print_blob=True,
                          max_examples=CI_EXAMPLES)
settings.load_profile("dev")


def examples(full: int) -> int:
    """The max_examples of a test that needs more (or fewer) than the profile's: `full` under the ci profile, the
    same fraction of it as the profile loaded runs of the default (a fifth locally), never under 10. Read when the
    test module is imported, after pytest has loaded the profile named on its command line."""
    return max(10, full * settings.default.max_examples // CI_EXAMPLES)


@pytest.fixture
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session")
def torch():
    """torch, imported when a test that needs it runs (skipped where it is not installed): a test module that
    imported it would make collecting the suite pay its import, 3 s, in every pytest-xdist worker."""
    return pytest.importorskip("torch")


@contextmanager
def exclusive(lock: Path) -> Iterator[None]:
    """Held by one process at a time: the pytest-xdist workers of a session, or two sessions sharing a cache."""
    lock.parent.mkdir(parents=True, exist_ok=True)
    with lock.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def _export_key() -> str:
    """What an export depends on: the code that writes it and the libraries whose data and output it holds."""
    digest = hashlib.sha256()
    for source in ("rows/vocab_export.py", "rows/qwen3_template.py", "rows/llama3_template.py", "atomic.py"):
        digest.update((REPO / "src/openrecipes" / source).read_bytes())
    digest.update(f"tokenizers {importlib.metadata.version('tokenizers')} "
                  f"quicktok-v1 {importlib.metadata.version('quicktok-v1')}".encode())
    return digest.hexdigest()[:16]


class TokenizerExports:
    """`openrecipes tokenizer export FAMILY` run once per family, on first use, and kept in the ignored
    .pytest_cache/ under a key over the exporter's source and the tokenizers and quicktok versions: an export takes
    seconds (gpt-oss's most), every rows test only reads what it wrote, and the pytest-xdist workers and later runs
    read the same folder (a change to the exporter makes a new key, so it is exported and checked again; a fresh
    clone, as in CI, exports everything). The encoders and tokenizers loaded from the exports are kept too."""

    def __init__(self, root: Path):
        self.root = root
        self._results: dict[str, dict] = {}
        self._loaded: dict[tuple[str, ...], object] = {}

    def written(self, name: str, write: Callable[[Path], dict]) -> dict:
        """`write(folder)`'s result, with the folder it wrote, made once under `name` and read back after."""
        if name not in self._results:
            folder, result = self.root / name, self.root / f"{name}.json"
            with exclusive(self.root / f"{name}.lock"):
                if not result.exists():  # the result is written last: without it the folder is unfinished
                    shutil.rmtree(folder, ignore_errors=True)
                    result.write_text(json.dumps(write(folder)))
            self._results[name] = {**json.loads(result.read_text()), "out": str(folder)}
        return self._results[name]

    def result(self, family: str) -> dict:
        """What export_tokenizer returned for the family (its folder, the tokenizer.json digest)."""
        from openrecipes.rows.vocab_export import export_tokenizer

        return self.written(family, lambda folder: export_tokenizer(family, folder))

    def __getitem__(self, family: str) -> Path:
        """The folder of the family's export."""
        return Path(self.result(family)["out"])

    def tokenizer(self, family: str):
        """The family's tokenizer.json as a `tokenizers.Tokenizer`, loaded once per process (the encoders share it);
        a test that encodes with it sets encode_special_tokens itself."""
        from openrecipes.rows.encoders import load_tokenizer

        return load_tokenizer(self[family] / "tokenizer.json")

    def parts_encoder(self, family: str, chat_format: str, eos: str):
        """The reference encoder (PartsEncoder) on the family's export, made once per format and EOS: loading a
        tokenizer.json of 150,000 to 200,000 tokens takes a second or more. It sets its tokenizer's flags on every
        call, so tests share it safely."""
        from openrecipes.rows.encoders import PartsEncoder

        key = ("parts", family, chat_format, eos)
        if key not in self._loaded:
            self._loaded[key] = PartsEncoder(self[family], chat_format, eos)
        return self._loaded[key]

    def auto_tokenizer(self, family: str):
        """transformers' AutoTokenizer on the family's export, loaded once (tests only encode and render with it)."""
        from transformers import AutoTokenizer

        key = ("auto", family)
        if key not in self._loaded:
            self._loaded[key] = AutoTokenizer.from_pretrained(str(self[family]))
        return self._loaded[key]


@pytest.fixture(scope="session")
def exports() -> TokenizerExports:
    root, key = REPO / ".pytest_cache/openrecipes/exports", _export_key()
    for stale in (folder for folder in root.glob("*") if folder.is_dir() and folder.name != key):
        shutil.rmtree(stale, ignore_errors=True)  # made by an exporter this checkout no longer has: 50 MB each
    return TokenizerExports(root / key)


@pytest.fixture(scope="session")
def qwen3(exports) -> Path:
    """The Qwen3 tokenizer `openrecipes tokenizer export qwen3` writes."""
    return exports["qwen3"]


def built_once(tmp_path_factory: pytest.TempPathFactory, worker_id: str, name: str, build: Callable[[Path], T]) -> T:
    """`build(folder)`'s result, made once per test session: a session fixture runs once in each pytest-xdist
    worker, so the first worker to ask builds into the session's shared temporary folder, under a lock, and every
    worker reads the pickled result (the others wait for it rather than build it again)."""
    base = tmp_path_factory.getbasetemp()
    shared = base if worker_id == "master" else base.parent  # the parent is this session's, shared by its workers
    result = shared / f"{name}.pickle"
    with exclusive(shared / f"{name}.lock"):
        if not result.exists():  # written last: a build that failed leaves none, and the next to ask tries again
            result.write_bytes(pickle.dumps(build(shared / name)))
    return pickle.loads(result.read_bytes())


@pytest.fixture(scope="session")
def bundled_site(tmp_path_factory, worker_id):
    """The bundled catalog's site, built once per session for every test that only reads it: a build draws some
    thirty SVG plots, many seconds of CPU each time. Tests that change a catalog or the output folder build their
    own."""
    from openrecipes.catalog.store import load_catalog
    from openrecipes.site.build import build_site

    return built_once(tmp_path_factory, worker_id, "bundled-site", lambda out: build_site(load_catalog(REPO), out))


def openrecipes(*args: object, cwd: Path = REPO, columns: int = 250) -> subprocess.CompletedProcess:
    """`openrecipes ARGS` as a shell runs it (the real entry point `main()`: its exit code, stdout and stderr, a wide
    terminal so rich does not ellipsize table cells), but in this process: a new interpreter per call would spend a
    second or more importing the toolchain again; `columns` is the terminal width rich sees. Tests about the process
    boundary itself (signals, a traceback escaping, imports in a bare interpreter) start a real process instead. An
    exception that escapes `main()` fails the test, as the traceback a user would see."""
    from openrecipes.cli import main

    argv, here = [str(a) for a in args], Path.cwd()
    with CliRunner().isolation(env={"COLUMNS": str(columns)}) as (out, err, _):
        sys.argv, saved = ["openrecipes", *argv], sys.argv
        os.chdir(cwd)
        try:
            main()
            code = 0
        except SystemExit as done:
            code = done.code if isinstance(done.code, int) else 0 if done.code is None else 1
        finally:
            sys.argv = saved
            os.chdir(here)
            sys.stdout.flush()
            sys.stderr.flush()
        return subprocess.CompletedProcess(argv, code, out.getvalue().decode(), err.getvalue().decode())


class _LiteralDumper(yaml.SafeDumper):
    """Writes multi-line strings (the run command) as | blocks, as the catalog does."""


_LiteralDumper.add_representer(
    str,
    lambda dumper, value: dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None),
)


def write_recipe(tmp_path: Path, data: dict, name: str = "recipe.yaml") -> Path:
    """Write recipe data under a recipes/<model>/<gpu>/ tree inside tmp_path, like the catalog's layout."""
    model_dir = {"GLM-5.2-744B-A40B": "glm-5.2-744b-a40b", "gpt-oss-20b": "gpt-oss-20b"}.get(data.get("model"), "x")
    gpu = data.get("gpu", {}).get("type", "x") if isinstance(data.get("gpu"), dict) else "x"
    path = tmp_path / "recipes" / model_dir / str(gpu).lower() / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.dump(data, Dumper=_LiteralDumper, sort_keys=False, width=1000), encoding="utf-8")
    return path


def load_seed(path: Path) -> dict:
    from openrecipes.catalog.yamlio import read_yaml

    return read_yaml(path).data

