"""Runs fuzz cases through `openrecipes` in this one process, one after the other, under the contract's limits.

Reads one JSON case a line on stdin ({"id", "argv", "cwd", "script"}: a script such as an importer is run in place of
`openrecipes`) and writes its result as one JSON line to the file
descriptor FUZZ_REPORT_FD (not stdout: a command's child processes may write there).
The process's address space is capped (FUZZ_MEMORY_BYTES, 1 GiB), so a case that tries to hold more fails with
MemoryError instead of growing; each case has FUZZ_SECONDS (30 s) on a timer, so a hang becomes a result, not a
stuck suite. In-process, so the interpreter and imports are paid once for hundreds of cases.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import resource
import runpy
import signal
import sys
import time
import traceback


class CaseTimeout(BaseException):
    """Raised by the timer; a BaseException so that no `except Exception` in the code under test swallows it."""


def _on_timer(signum, frame):  # noqa: ANN001
    raise CaseTimeout()


def run_case(case: dict, seconds: float) -> dict:
    from openrecipes.cli import main

    out, err = io.StringIO(), io.StringIO()
    code, failure = None, None
    os.chdir(case["cwd"])
    script = case.get("script")
    sys.argv = [script or "openrecipes", *case["argv"]]
    started = time.monotonic()
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            if script:  # an importer, run as `python SCRIPT ARGS` runs it
                runpy.run_path(script, run_name="__main__")
            else:
                main()
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    except CaseTimeout:
        failure = "hang"
    except MemoryError:
        failure = "memory"
    except BaseException:  # noqa: BLE001 (any escaping exception is the finding)
        failure = "traceback"
        err.write(traceback.format_exc())
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    return {"id": case["id"], "code": code, "failure": failure, "seconds": round(time.monotonic() - started, 3),
            "stdout": out.getvalue()[-4000:], "stderr": err.getvalue()[:65536]}


def main() -> None:
    limit = int(os.environ.get("FUZZ_MEMORY_BYTES", 2**30))
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    seconds = float(os.environ.get("FUZZ_SECONDS", 30))
    signal.signal(signal.SIGALRM, _on_timer)
    report = os.fdopen(int(os.environ["FUZZ_REPORT_FD"]), "w")
    for line in sys.stdin:
        print(json.dumps(run_case(json.loads(line), seconds)), file=report, flush=True)


if __name__ == "__main__":
    main()
