"""How long `rows build` takes to refuse a --chat-format whose tokens the tokenizer lacks: a Qwen3 export asked for
gpt_oss rows, with 2 workers, as a user mistypes it.

Arms, alternating in one process: the build as it is (the bundled export's tokens are checked in this process before
any worker starts) and the build without that check (`check_bundled_tokens` replaced by a no-op: the workers start,
load the encoder, and the first one reports the missing token, as before the check). Both must refuse with the same
message. Wall seconds, median of --runs.

    .venv/bin/python benchmarks/rows_refusal.py [--runs 5] [--tiny]     # prints a Markdown section for RESULTS.md
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

from openrecipes.errors import UserError
from openrecipes.rows import build
from openrecipes.rows.build import BuildRequest, build_rows
from openrecipes.rows.vocab_export import export_tokenizer

CONVERSATIONS = Path(__file__).resolve().parents[1] / "tests/fixtures/rows/conversations.jsonl"


def refusal(tokenizer: Path, out: Path) -> tuple[str, float]:
    start = time.perf_counter()
    try:
        build_rows(BuildRequest(CONVERSATIONS, tokenizer, "gpt_oss", 32, 1, 1, out, workers=2))
    except UserError as error:
        return str(error), time.perf_counter() - start
    raise SystemExit("the build did not refuse a tokenizer without gpt_oss's tokens")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--tiny", action="store_true", help="one run per arm (a check that it runs)")
    args = parser.parse_args()
    runs = 1 if args.tiny else args.runs
    checked, unchecked = [], []
    with tempfile.TemporaryDirectory() as folder:
        tokenizer = Path(folder) / "qwen3"
        export_tokenizer("qwen3", tokenizer)
        check = build.check_bundled_tokens
        for run in range(runs):
            message, seconds = refusal(tokenizer, Path(folder) / f"checked-{run}")
            checked.append(seconds)
            build.check_bundled_tokens = lambda *arguments: None
            try:
                previous, seconds = refusal(tokenizer, Path(folder) / f"unchecked-{run}")
            finally:
                build.check_bundled_tokens = check
            unchecked.append(seconds)
            if previous != message:
                raise SystemExit(f"the arms refuse differently:\n{message}\n{previous}")
    now, before = statistics.median(checked), statistics.median(unchecked)
    print(f"## `rows build` refusing a format the export lacks — {datetime.date.today()} "
          f"(benchmarks/rows_refusal.py --runs {runs})\n")
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}; "
          f"{runs} runs per arm, alternating; wall seconds, median (min-max).\n")
    print("| arm | seconds |\n|---|---:|")
    print(f"| checked before the workers start | {now:.3f} ({min(checked):.3f}-{max(checked):.3f}) |")
    print(f"| reported by the workers | {before:.3f} ({min(unchecked):.3f}-{max(unchecked):.3f}) |")
    print(f"\nRefused {before / now:.0f}x sooner, with the same message: {message}")


if __name__ == "__main__":
    main()
