"""Peak memory of `openrecipes measure` on a huge log: the log is read as a stream, so memory follows the number of
steps, not the file's size.

    python benchmarks/log_memory.py [GIB] [STEPS]    # default: a 2 GiB Megatron log of 200,000 steps in /tmp
    python benchmarks/log_memory.py --tiny           # a 1 MiB log of 100 steps: a check that the benchmark runs

The log is written to /tmp (never committed), measured by a child process whose peak resident memory
(ru_maxrss) is printed, then removed. A log of the same steps without the noise lines is measured too, so the two
peaks show what the file's size costs.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

NOISE = ("[2026-10-20 08:00:00] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read "
         "comm 0x5594c3a0 rank 0 nRanks 8 nNodes 1 localRanks 8 localRank 0 MNNVL 0\n")


def write_log(path: Path, steps: int, total_bytes: int) -> None:
    step_bytes = len(_iteration(steps, steps))
    noise_per_step = max(0, (total_bytes // steps - step_bytes) // len(NOISE))
    block = NOISE * noise_per_step
    with open(path, "w", encoding="utf-8", buffering=2**20) as log:
        for i in range(1, steps + 1):
            log.write(block)
            log.write(_iteration(i, steps))


def _iteration(i: int, steps: int) -> str:
    return (f" [2026-10-20 08:00:00] iteration {i:8d}/{steps:8d} | elapsed time per iteration (ms): "
            f"{12000 + i % 97}.5 | lm loss: {2.5 - i * 1e-6:.6E} | grad norm: 1.000 |\n")


def peak_rss_mib(log: Path, steps: int) -> tuple[float, float]:
    started = time.monotonic()
    script = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL);"
              "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    out = subprocess.run([sys.executable, "-c", script, sys.executable, "-m", "openrecipes", "measure", str(log),
                          "--window", "10", str(steps - 1), "--json"], check=True, capture_output=True, text=True)
    return int(out.stdout.strip()) / 1024, time.monotonic() - started


def main() -> None:
    arguments = ["0.001", "100"] if "--tiny" in sys.argv[1:] else sys.argv[1:]
    gib = float(arguments[0]) if arguments else 2.0
    steps = int(arguments[1]) if len(arguments) > 1 else 200_000
    with tempfile.TemporaryDirectory(prefix="openrecipes-log-memory-", dir="/tmp") as folder:
        for name, size in (("steps only", 0), (f"{gib:g} GiB", int(gib * 2**30))):
            log = Path(folder) / "train.log"
            write_log(log, steps, size)
            rss, seconds = peak_rss_mib(log, steps)
            print(f"{name:>12}: {os.path.getsize(log) / 2**20:9.0f} MiB log, {steps:,} steps -> peak RSS "
                  f"{rss:.0f} MiB ({seconds:.0f} s)")
            log.unlink()


if __name__ == "__main__":
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    main()
