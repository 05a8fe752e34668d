"""Every command against the fuzz corpus (tests/fuzz/corpus, from tests/fuzz/make_corpus.py), the inputs that
cannot be committed, and the hostile cases of tests/fuzz/hostile_cases.py: each run must keep the contract a user
relies on — exit 0, 1 or 2 (the exits its input allows); one `error: ...` line on stderr for 2; never a traceback;
under 30 s; under 1 GiB (the worker's address space is capped there); and every path a case names as kept (an
output pointed at a FIFO, a device, a link, a recipe) exactly as it was.

The importers (scripts/import_*.py) run in the same workers, as scripts. The cases run in two worker processes
(tests/fuzz/run.py); `python tests/fuzz/run.py` prints the same totals.
Over a thousand command runs take minutes on a CPU: the module is `slow` (CI runs it; the quick loop does not).
"""

from __future__ import annotations

import os
import shutil
import sys
from collections import defaultdict
from pathlib import Path

import pytest
from conftest import built_once

sys.path.insert(0, str(Path(__file__).parent / "fuzz"))

from cases import CORPUS, all_cases  # noqa: E402
from hostile_cases import leaf_commands  # noqa: E402
from make_corpus import write_corpus  # noqa: E402
from run import run_cases, summary  # noqa: E402

pytestmark = pytest.mark.slow

COMMANDS = ["validate", "list", "show", "run --dry-run", "run", "site build", "serve", "plan", "plan export", "tune",
            "measure", "check convergence", "check config", "rows build", "rows demo", "tokenizer export", "audit",
            "reproduce", "record", "launch", "schema", "check component optimizer-offload",
            "model add", "refresh", "import megatron-bridge", "import torchtitan", "import dgxc-benchmarking",
            "import mlperf-training"]


@pytest.fixture(scope="session")
def outcomes(tmp_path_factory, worker_id, exports):
    """Every case's outcome by command: the cases run once per session, on both cores (their own two workers),
    whichever pytest-xdist worker asks first; the tests of this module on either worker read the same outcomes."""
    def run_all(scratch: Path) -> dict[str, list]:
        tokenizer = scratch / "tokenizer"  # a copy: a case may write beside the tokenizer it is given
        shutil.copytree(exports["qwen3"], tokenizer)
        results = run_cases(all_cases(scratch / "cases", tokenizer), workers=min(2, os.cpu_count() or 1))
        print("\n" + summary(results))
        by_command = defaultdict(list)
        for outcome in results.values():
            by_command[outcome.case.command].append(outcome)
        return dict(by_command)

    return built_once(tmp_path_factory, worker_id, "fuzz-outcomes", run_all)


def _described(outcome) -> str:
    return (f"{outcome.case.id}: {'; '.join(outcome.problems)}\n    argv: {' '.join(outcome.case.argv)[:200]}\n"
            f"    stderr: {outcome.stderr.strip()[-400:]}")


def test_the_committed_corpus_is_what_make_corpus_writes(tmp_path):
    write_corpus(tmp_path / "corpus")
    made = {p.relative_to(tmp_path / "corpus"): p.read_bytes() for p in (tmp_path / "corpus").rglob("*") if p.is_file()}
    committed = {p.relative_to(CORPUS): p.read_bytes() for p in CORPUS.rglob("*") if p.is_file()}
    assert made.keys() == committed.keys() and made == committed, "run tests/fuzz/make_corpus.py and commit"


def test_the_corpus_holds_over_4900_malformed_inputs_over_every_command(outcomes):
    assert sum(len(runs) for runs in outcomes.values()) >= 4900
    assert set(COMMANDS) <= set(outcomes)


def test_every_command_of_the_cli_is_in_the_corpus(outcomes):
    """A new command gets the option sweep's cases at once (tests/fuzz/hostile_cases.py); this keeps it so."""
    assert {" ".join(words) for words in leaf_commands()} <= set(outcomes)


@pytest.mark.parametrize("command", COMMANDS)
def test_every_input_gets_exit_0_1_or_2_one_error_line_and_no_traceback(outcomes, command):
    broken = [o for o in outcomes[command] if o.problems]
    owned = [o for o in broken if not o.case.xfail]
    assert not owned, f"{len(owned)} of {len(outcomes[command])} inputs broke the contract:\n" + "\n".join(
        map(_described, owned[:20]))
    if broken:
        pytest.xfail(f"{broken[0].case.xfail}: {len(broken)} input(s): " + ", ".join(o.case.id for o in broken))
