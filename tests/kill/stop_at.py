"""Runs `openrecipes ARGS...` with one function made to stop the process (SIGSTOP) right before or right after it
runs, so that a test can SIGKILL the command at that exact instant: the final rename or swap of an output.

    python stop_at.py MODULE.FUNCTION before|after ARGS...
"""

from __future__ import annotations

import importlib
import os
import signal
import sys


def main() -> None:
    target, when, *args = sys.argv[1:]
    module_name, name = target.rsplit(".", 1)
    module = importlib.import_module(module_name)
    original = getattr(module, name)

    def stopping(*a, **k):  # noqa: ANN002, ANN003
        if when == "before":
            os.kill(os.getpid(), signal.SIGSTOP)
        result = original(*a, **k)
        if when == "after":
            os.kill(os.getpid(), signal.SIGSTOP)
        return result

    setattr(module, name, stopping)
    sys.argv = ["openrecipes", *args]
    from openrecipes.cli import main as openrecipes_main

    openrecipes_main()


if __name__ == "__main__":
    main()
