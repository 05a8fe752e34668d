"""Outputs a refactor must keep byte-identical, before and after: `audit --json`, `list --json`, `validate --json`,
`plan qwen3-8b --gpu H200 --gpus 2 --json` and every file of `site build`, each run with one checkout's src/.

    python benchmarks/figures_guard.py --before /path/to/old/src --after src --out /tmp/guard

Prints each output that differs and whether it differs only by the time-to-train figure (the `list --json` key, the
CSV column, the compare page's row, the recipe page's line): stripped of it, it must equal the old output byte for
byte. Exit 1 when anything else differs. `--tiny` runs `list --json` for one model, this checkout against itself.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

COMMANDS = {"audit.json": ("audit", "--json"), "list.json": ("list", "--json"),
            "validate.json": ("validate", "--json"), "plan.json": ("plan", "qwen3-8b", "--gpu", "H200", "--gpus", "2",
                                                                 "--json")}
TINY = {"list.json": ("list", "--json", "--model", "qwen3-8b")}


def capture(src: Path, out: Path, commands: dict[str, tuple[str, ...]], site: bool) -> None:
    """Each command's stdout under `out`, and the built site under out/site; any exit but 0 stops the run."""
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(src.resolve())}
    runs = [(name, args) for name, args in commands.items()]
    runs += [("site.txt", ("site", "build", "--out", str(out / "site")))] if site else []
    for name, args in runs:
        done = subprocess.run([sys.executable, "-m", "openrecipes", *args], env=env, capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"{src}: openrecipes {' '.join(args)} exited {done.returncode}: {done.stderr[-2000:]}")
        (out / name).write_text(done.stdout)


NEW = "time_to_train_hours"
LABEL = "Time to train"


def _strip_json(value):
    if isinstance(value, dict):
        return {k: _strip_json(v) for k, v in value.items() if k != NEW}
    if isinstance(value, list):
        return [_strip_json(v) for v in value
                if not (isinstance(v, dict) and str(v.get("label", "")).startswith(LABEL))]
    return value


def _strip_csv(text: str) -> str:
    rows = list(csv.reader(io.StringIO(text)))
    drop = rows[0].index(NEW) if rows and NEW in rows[0] else None
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows([r[:drop] + r[drop + 1:] if drop is not None else r for r in rows])
    return out.getvalue()


def _strip_compare(text: str) -> str:
    head, payload = text.split("(", 1)
    record = json.loads(payload.rsplit(")", 1)[0])
    record["figures"] = _strip_json(record["figures"])
    record["facts"] = [f for f in record["facts"] if not f[0].startswith(LABEL)]
    return head + "(" + json.dumps(record, ensure_ascii=True, separators=(",", ":")).replace("<", "\\u003c") + ");\n"


def _strip_html(text: str) -> str:
    return re.sub(r"\s*<dt>Time to train[^<]*</dt><dd[^>]*>[^<]*</dd>", "", text)


def without_new_figure(path: Path, text: str) -> str:
    if path.suffix == ".json":
        return json.dumps(_strip_json(json.loads(text)), indent=2)
    if path.suffix == ".csv":
        return _strip_csv(text)
    if path.suffix == ".js" and "openrecipesCompare.receive" in text:
        return _strip_compare(text)
    if path.suffix == ".html":
        return _strip_html(text)
    return text


def normal(path: Path, text: str) -> str:
    return json.dumps(json.loads(text), indent=2) if path.suffix == ".json" else text


def compare(before: Path, after: Path, names: list[str]) -> int:
    """Prints each output that differs; returns how many differ by more than the new figure."""
    pairs = [(before / n, after / n) for n in names]
    if (before / "site").is_dir():
        files = {p.relative_to(before / "site") for p in (before / "site").rglob("*") if p.is_file()}
        files |= {p.relative_to(after / "site") for p in (after / "site").rglob("*") if p.is_file()}
        pairs += [(before / "site" / n, after / "site" / n) for n in sorted(files)]
    bad = differ = 0
    for old, new in pairs:
        if old.is_file() and new.is_file() and old.read_bytes() == new.read_bytes():
            continue
        differ += 1
        same = old.is_file() and new.is_file() and normal(old, old.read_text()) == without_new_figure(
            new, new.read_text())
        bad += not same
        print(f"{'only the new figure' if same else 'OTHER CHANGE'}: {new.relative_to(after)}")
    print(f"{differ} files differ, {bad} by more than the new figure")
    return bad


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, help="the old checkout's src/")
    parser.add_argument("--after", type=Path, default=Path("src"), help="the new checkout's src/ (default: src)")
    parser.add_argument("--out", type=Path, help="where both captures are kept (default: a temporary folder)")
    parser.add_argument("--tiny", action="store_true", help="list --json for one model, this checkout against itself")
    args = parser.parse_args()
    if args.tiny:
        args.before = args.after = Path(os.environ.get("PYTHONPATH", "src").split(os.pathsep)[0])
    elif args.before is None:
        parser.error("give --before: the src/ of the checkout to compare against")
    out = args.out or Path(tempfile.mkdtemp(prefix="figures-guard-"))
    commands = TINY if args.tiny else COMMANDS
    for arm, src in (("before", args.before), ("after", args.after)):
        shutil.rmtree(out / arm, ignore_errors=True)
        capture(src, out / arm, commands, site=not args.tiny)
    bad = compare(out / "before", out / "after", list(commands))
    if args.out is None:
        shutil.rmtree(out)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
