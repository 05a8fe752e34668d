"""Runs fuzz cases in a few worker processes (tests/fuzz/worker.py) and checks each result against the contract.

The contract for any input: exit 0, 1 or 2; for 2, exactly one line on stderr; never a traceback; done within the
time limit; within the memory limit. A worker that dies (a segfault) or stops answering (a hang the timer could
not interrupt) is replaced, and its case recorded as such.
"""

from __future__ import annotations

import json
import os
import select
import stat
import subprocess
import sys
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

WORKER = Path(__file__).with_name("worker.py")
SECONDS = 30
MEMORY_BYTES = 2**30


@dataclass
class Case:
    id: str
    command: str  # the command under test, for the totals
    argv: list[str]
    cwd: str
    expect: tuple[int, ...] = (0, 1, 2)  # exit codes the contract allows for this input
    xfail: str | None = None  # a known failure another change owns
    keep: tuple[str, ...] = ()  # paths the command must leave exactly as they were (outputs pointed at them)
    script: str | None = None  # a script run instead of `openrecipes` (the importers): argv are its arguments


@dataclass
class Outcome:
    case: Case
    code: int | None
    failure: str | None  # traceback, hang, memory, crash, or a broken contract
    seconds: float
    stderr: str = ""
    stdout: str = ""
    problems: list[str] = field(default_factory=list)


def contract_problems(code: int | None, failure: str | None, stdout: str, stderr: str,
                      expect: tuple[int, ...]) -> list[str]:
    problems = [failure] if failure else []
    if code is not None and code not in expect:
        problems.append(f"exit {code}, expected {'/'.join(map(str, expect))}")
    if "Traceback (most recent call last)" in stdout + stderr:
        problems.append("traceback")
    if code == 2:
        lines = [line for line in stderr.splitlines() if line.strip() and not line.startswith("waiting for")]
        if len(lines) != 1 or not lines[0].startswith("error: "):
            problems.append(f"exit 2 with {len(lines)} stderr lines, not one 'error: ...' line")
    return problems


def node_state(path: str) -> tuple:
    """What a command that destroyed `path` would have changed: its type, a link's target, a file's bytes, a
    folder's names, a device's numbers."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return ("missing",)
    kind = stat.S_IFMT(info.st_mode)
    if stat.S_ISLNK(info.st_mode):
        return kind, os.readlink(path)
    if stat.S_ISREG(info.st_mode):
        return kind, Path(path).read_bytes()
    if stat.S_ISDIR(info.st_mode):
        return kind, tuple(sorted(os.listdir(path)))
    return kind, info.st_rdev


class _Worker:
    def __init__(self, env: dict[str, str]) -> None:
        read, write = os.pipe()
        self.process = subprocess.Popen([sys.executable, str(WORKER)], stdin=subprocess.PIPE,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, pass_fds=(write,),
                                        env={**env, "FUZZ_REPORT_FD": str(write)}, text=True)
        os.close(write)
        self.report = os.fdopen(read, "r")

    def run(self, case: Case, seconds: float) -> dict | None:
        self.process.stdin.write(json.dumps({"id": case.id, "argv": case.argv, "cwd": case.cwd,
                                             "script": case.script}) + "\n")
        self.process.stdin.flush()
        ready, _, _ = select.select([self.report], [], [], seconds + 30)
        line = self.report.readline() if ready else ""
        return json.loads(line) if line else None

    def stop(self) -> None:
        self.process.kill()
        self.process.wait()
        self.report.close()


def _serve(queue: list[Case], outcomes: dict[str, Outcome], env: dict[str, str], seconds: float) -> None:
    worker = _Worker(env)
    try:
        for case in queue:
            kept = {path: node_state(path) for path in case.keep}
            try:
                result = worker.run(case, seconds)
            except (BrokenPipeError, ValueError):
                result = None
            if result is None:  # the worker died or stopped answering: the case killed it
                worker.stop()
                died = worker.process.returncode
                failure = "hang" if died == -9 else f"crash (worker exit {died})"
                outcomes[case.id] = Outcome(case, None, failure, seconds, problems=[failure])
                worker = _Worker(env)
                continue
            outcomes[case.id] = Outcome(case, result["code"], result["failure"], result["seconds"], result["stderr"],
                                        result["stdout"], contract_problems(result["code"], result["failure"],
                                                                            result["stdout"], result["stderr"],
                                                                            case.expect))
            outcomes[case.id].problems += [f"destroyed ({path})" for path, state in kept.items()
                                           if node_state(path) != state]
    finally:
        worker.stop()


def run_cases(cases: list[Case], workers: int = 2, seconds: float = SECONDS,
              memory_bytes: int = MEMORY_BYTES) -> dict[str, Outcome]:
    env = {**os.environ, "FUZZ_SECONDS": str(seconds), "FUZZ_MEMORY_BYTES": str(memory_bytes),
           "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "RAYON_NUM_THREADS": "1", "COLUMNS": "200"}
    # Heavy cases first, spread over the workers, so that no worker ends long after the others.
    ordered = sorted(cases, key=lambda case: case.command not in ("site build", "plan", "rows build", "rows demo"))
    queues = [ordered[i::workers] for i in range(workers)]
    outcomes: dict[str, Outcome] = {}
    threads = [threading.Thread(target=_serve, args=(queue, outcomes, env, seconds)) for queue in queues]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return outcomes


def summary(outcomes: dict[str, Outcome]) -> str:
    totals, bad = Counter(), Counter()
    kinds = Counter()
    for outcome in outcomes.values():
        totals[outcome.case.command] += 1
        if outcome.problems:
            bad[outcome.case.command] += 1
            for problem in outcome.problems:
                kinds[problem.split(" (")[0].split(",")[0]] += 1
    lines = [f"{command:22s} {totals[command]:5d} inputs  {bad[command]:3d} broke the contract"
             for command in sorted(totals)]
    lines.append(f"{'all':22s} {sum(totals.values()):5d} inputs  {sum(bad.values()):3d} broke the contract "
                 f"({', '.join(f'{k}: {v}' for k, v in sorted(kinds.items())) or 'none'})")
    slowest = max(outcomes.values(), key=lambda o: o.seconds, default=None)
    if slowest:
        lines.append(f"slowest: {slowest.case.id} {slowest.seconds:.1f} s")
    return "\n".join(lines)


def main() -> None:
    """`python tests/fuzz/run.py`: every case, with the totals per command and each broken contract."""
    import tempfile

    from cases import all_cases  # noqa: PLC0415 (run as a script from tests/fuzz)

    with tempfile.TemporaryDirectory(prefix="openrecipes-fuzz-") as folder:
        cases = all_cases(Path(folder))
        outcomes = run_cases(cases, workers=min(2, os.cpu_count() or 1))
        for outcome in outcomes.values():
            if outcome.problems:
                print(f"{outcome.case.id}: {'; '.join(outcome.problems)}{' [xfail]' if outcome.case.xfail else ''}"
                      f"\n    {' '.join(outcome.case.argv)[:300]}\n    {outcome.stderr.strip()[-600:]}")
        print(summary(outcomes))


if __name__ == "__main__":
    main()
