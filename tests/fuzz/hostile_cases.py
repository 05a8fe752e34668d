"""The second adversarial pass as fuzz cases: outputs pointed at what they must never replace, evidence that points
outside the catalog, reproductions that are not new runs, damaged step sequences, data sets with nothing in them,
empty and non-finite option values, dates no run can have, and the commands added since the first corpus (audit,
reproduce, record, launch, plan export, plan --emit-recipe).

To add cases: write a function `something_cases(scratch) -> list[Case]` here (or add rows to a table below: a
writer to FILE_WRITERS/FOLDER_WRITERS, a path to RUN_FOLDERS/REPRODUCTION_LOGS, a command to BASE_ARGV) and list
it in `hostile_cases`. A case is an argv for `openrecipes`, the folder it runs in, the exits its input allows
(`expect`), and the paths it must leave untouched (`keep`: checked byte for byte by tests/fuzz/run.py).
"""

from __future__ import annotations

import datetime
import os
import shutil
import stat
from collections.abc import Callable
from pathlib import Path

from cases import GOOD_LOG, _Scratch, held_port
from make_corpus import CORPUS, REPO
from run import Case

OURS = "recipes/qwen3-8b/h200/openrecipes-fsdp2-compile-noac-mb1.yaml"
STOCK = "recipes/qwen3-8b/h200/torchtitan-stock-fsdp2.yaml"
CANDIDATE = "runs/qwen3-8b-h200x2-openrecipes-fsdp2-compile-noac-mb1"
REFERENCE = "runs/qwen3-8b-h200x2-torchtitan-stock"
RERUN = "runs/reproductions/qwen3-8b-h200x2-rerun-20261130"
FIXTURE_LOGS = REPO / "tests/fixtures/logs"
BAD = (2,)


def qwen_catalog(scratch: _Scratch, edit: Callable[[str], str] | None = None) -> Path:
    """The Qwen3-8B recipes with their runs and reproductions (evidence to point at), OURS edited by `edit`."""
    root = scratch.folder()
    for folder in ("models", "hardware", "recipes/qwen3-8b", CANDIDATE, REFERENCE, "runs/reproductions"):
        shutil.copytree(REPO / folder, root / folder)
    if edit is not None:
        recipe = root / OURS
        recipe.write_text(edit(recipe.read_text(encoding="utf-8")), encoding="utf-8")
    return root


def _targets(folder: Path, named: Callable[[str], str] = str) -> dict[str, Path]:
    """One of each node an output must never replace, at folder/named(kind). The device is made here (root only),
    never /dev's own, so a broken rule replaces this node and nothing of the machine's."""
    folder.mkdir(parents=True, exist_ok=True)
    victim = folder / "victim.txt"
    victim.write_text("a file someone else wrote\n", encoding="utf-8")
    def folder_of_others(path: Path) -> None:
        path.mkdir()
        (path / "keep.txt").write_text("keep\n", encoding="utf-8")

    makers: dict[str, Callable[[Path], object]] = {
        "fifo": os.mkfifo, "symlink": lambda p: p.symlink_to(victim),
        "dangling-link": lambda p: p.symlink_to(folder / "nowhere"), "loop": lambda p: p.symlink_to(p),
        "folder-of-others": folder_of_others, "strangers-file": lambda p: p.write_text("someone's notes\n")}
    if os.geteuid() == 0:
        makers["device"] = lambda p: os.mknod(p, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    made = {}
    for kind, make in makers.items():
        made[kind] = folder / named(kind)
        make(made[kind])
    return made


FILE_WRITERS = {  # OUT: the output; the catalog is the case's working directory
    "plan --emit-recipe": ["plan", "qwen3-8b", "--gpu", "H200", "--gpus", "2", "--emit-recipe", "1", "--out", "OUT"],
    "plan --emit-recipe --force": ["plan", "qwen3-8b", "--gpu", "H200", "--gpus", "2", "--emit-recipe", "1",
                                   "--out", "OUT", "--force"],
    "launch --out": ["launch", STOCK, "--slurm", "--out", "OUT"],
    "launch --out --force": ["launch", STOCK, "--slurm", "--out", "OUT", "--force"],
    "tune --out-recipe": ["tune", "qwen3-8b", "--gpu", "H200", "--gpus", "2", "--budget-minutes", "5", "--dry-run",
                          "--out-recipe", "OUT"],
    "measure --write": ["measure", f"{RERUN}/ours/train.log", "--recipe", "OUT", "--window", "5", "19", "--write"],
    "reproduce --write": ["reproduce", "OUT", f"{RERUN}/ours/train.log", "--write"],
}
FOLDER_WRITERS = {
    "plan export": ["plan", "export", "--out", "OUT"],
    "tokenizer export": ["tokenizer", "export", "qwen3", "--out", "OUT"],
    "site build": ["site", "build", "--out", "OUT", "--catalog", "."],
    "rows build": ["rows", "build", "--conversations", str(CORPUS / "conversations/good.jsonl"), "--tokenizer",
                   "TOKENIZER", "--chat-format", "qwen3", "--rows", "2", "--row-tokens", "64", "--seed", "1",
                   "--out", "OUT", "--workers", "0"],
    "rows demo": ["rows", "demo", "--out", "OUT", "--rows", "2", "--row-tokens", "64", "--workers", "0"],
    "run --out": ["run", STOCK, "--steps", "2", "--out", "OUT"],
}


def output_cases(scratch: _Scratch, tokenizer: Path | None) -> list[Case]:
    """Every writer pointed at every node it must not replace, and at a recipe of the catalog: exit 2, untouched."""
    cases = []
    for command, template in {**FILE_WRITERS, **FOLDER_WRITERS}.items():
        if "TOKENIZER" in template and tokenizer is None:
            continue
        root = qwen_catalog(scratch)
        targets = _targets(root / "targets")
        if command in FILE_WRITERS:
            targets["catalog-recipe"] = root / OURS
        targets["catalog-run"] = root / CANDIDATE / "train.log"
        for name, target in targets.items():
            if command in ("measure --write", "reproduce --write") and name in ("catalog-recipe", "strangers-file"):
                continue  # these update a recipe in place: the catalog's own recipe is their input
            argv = [str(target) if word == "OUT" else str(tokenizer) if word == "TOKENIZER" else word
                    for word in template]
            keep = (str(target), str(root / "targets/victim.txt"), str(root / OURS))
            cases.append(Case(f"{command}/over-{name}", command.split(" --")[0], argv, str(root), expect=BAD,
                              keep=keep))
    root = qwen_catalog(scratch)  # record writes recipes/<model>/<gpu>/NAME.yaml beside --like
    for name, target in _targets(root / "recipes/qwen3-8b/h200", lambda kind: f"fuzz-{kind}.yaml").items():
        cases.append(Case(f"record/over-{name}", "record", ["record", RERUN + "/stock", "--like", STOCK, "--name",
                                                            f"fuzz-{name}"], str(root), expect=BAD,
                          keep=(str(target),)))
    return cases


RUN_FOLDERS = ["/etc", "/", "../../../etc", "runs/../../..", "runs/../models", "models", "~", "~/runs", "runs/nope",
               "runs/link-out", "runs/loop", "runs/fifo-log", "runs/log-is-folder", "runs/log-links-out",
               "runs/" + "a" * 300, "runs/\u202ereversed", "runs/ space", "./runs/x/../../../etc"]
REPRODUCTION_LOGS = ["/etc/passwd", "../../../etc/passwd", "runs/../../etc/passwd", "runs/link-to-passwd",
                     "runs/fifo.log", "runs/loop.log", "runs/a-folder", "recipes/qwen3-8b/h200/x.yaml", "models",
                     "runs/reproductions/../../models/qwen3-8b.yaml", "runs/nope.log", "~/train.log"]


def _hostile_runs(root: Path) -> None:
    """The nodes RUN_FOLDERS and REPRODUCTION_LOGS name: links out, loops, FIFOs, folders where a log should be."""
    runs, outside = root / "runs", root.parent / f"{root.name}-outside"
    outside.mkdir()
    shutil.copy(root / CANDIDATE / "train.log", outside / "train.log")
    (runs / "link-out").symlink_to(outside)
    (runs / "loop").symlink_to(runs / "loop")
    (runs / "fifo-log").mkdir()
    os.mkfifo(runs / "fifo-log/train.log")
    (runs / "log-is-folder/train.log").mkdir(parents=True)
    (runs / "log-links-out").mkdir()
    (runs / "log-links-out/train.log").symlink_to(outside / "train.log")
    (runs / "link-to-passwd").symlink_to("/etc/passwd")
    os.mkfifo(runs / "fifo.log")
    (runs / "loop.log").symlink_to(runs / "loop.log")
    (runs / "a-folder").mkdir()


def evidence_cases(scratch: _Scratch) -> list[Case]:
    """Evidence paths outside the catalog's runs/: validate and audit name the field (exit 1), nothing follows
    them, nothing hangs on a FIFO, no traceback."""
    cases = []

    def commands(root: Path, name: str) -> None:
        for command, argv in (("validate", ["validate", "--catalog", str(root)]),
                              ("audit", ["audit", "--catalog", str(root)]),
                              ("audit", ["audit", str(root / OURS), "--catalog", str(root)]),
                              ("show", ["show", "openrecipes-fsdp2-compile-noac-mb1", "--catalog", str(root)]),
                              ("list", ["list", "--catalog", str(root)])):
            expect = (1, 2) if command in ("validate", "audit") else (0, 1, 2)
            cases.append(Case(f"{command}/{name}/{len(cases)}", command, argv, str(root), expect=expect,
                              keep=("/etc/passwd",)))

    for arm, pinned in (("candidate", CANDIDATE), ("reference", REFERENCE)):
        for path in RUN_FOLDERS:
            root = qwen_catalog(scratch, lambda text, a=arm, p=pinned, v=path: text.replace(f"{a}: {p}", f"{a}: '{v}'"))
            _hostile_runs(root)
            commands(root, f"runs.{arm}={path[:40]}")
    for path in REPRODUCTION_LOGS:
        root = qwen_catalog(scratch, lambda text, v=path: text.replace(f"log: {RERUN}/ours/train.log", f"log: '{v}'"))
        _hostile_runs(root)
        commands(root, f"reproductions.0.log={path}")
    for name, make in (("loop", lambda p: p.symlink_to(p)), ("dangling", lambda p: p.symlink_to(p.parent / "no")),
                       ("to-passwd", lambda p: p.symlink_to("/etc/passwd")),
                       ("to-folder", lambda p: p.symlink_to(p.parent))):
        root = qwen_catalog(scratch)
        make(root / f"recipes/qwen3-8b/h200/{name}.yaml")
        for command in ("validate", "list", "audit"):
            cases.append(Case(f"{command}/recipes-link-{name}", command, [command, "--catalog", str(root)], str(root),
                              expect=(1, 2)))
    return cases


def reproduction_cases(scratch: _Scratch) -> list[Case]:
    """Logs the recipe already cites, as they are or lightly changed, handed to reproduce --write: refused."""
    cases = []
    copies = {"candidate": CANDIDATE + "/train.log", "reference": REFERENCE + "/train.log",
              "earlier-reproduction": RERUN + "/ours/train.log"}
    for name, source in copies.items():
        for change in ("as-is", "line-added", "renamed", "crlf"):
            root = qwen_catalog(scratch)
            mine = root / "runs/reproductions/mine/train.log"
            mine.parent.mkdir(parents=True)
            text = (root / source).read_text(encoding="utf-8")
            text = {"line-added": text + "an added line\n", "crlf": text.replace("\n", "\r\n")}.get(change, text)
            mine.write_text(text, encoding="utf-8")
            argv = ["reproduce", OURS, str(mine.relative_to(root)), "--write", "--by", "a stranger"]
            cases.append(Case(f"reproduce --write/{name}-{change}", "reproduce", argv, str(root), expect=BAD,
                              keep=(str(root / OURS),)))
            cases.append(Case(f"reproduce/{name}-{change}", "reproduce", argv[:-3], str(root)))
    root = qwen_catalog(scratch, lambda text: text + text[text.index("reproductions:\n") + len("reproductions:\n"):])
    cases.append(Case("validate/reproduction-twice", "validate", ["validate", "--catalog", str(root)], str(root),
                      expect=(1,)))
    cases.append(Case("audit/reproduction-twice", "audit", ["audit", "--catalog", str(root)], str(root),
                      expect=(1,)))
    return cases


def _damaged_logs(folder: Path) -> dict[str, Path]:
    """Each fixture log with its step lines reordered, one written twice, one missing, all reversed."""
    from openrecipes.measure.formats import read_log

    made = {}
    for log in sorted(FIXTURE_LOGS.iterdir()):
        lines = log.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)
        at = [int(step.where.rsplit(":", 1)[1]) - 1 for step in read_log(log).steps]
        if len(at) < 3:
            continue
        before, middle = at[len(at) // 2 - 1], at[len(at) // 2]
        damaged = {"reordered": _swap(list(lines), before, middle),
                   "duplicated": lines[:middle + 1] + [lines[middle]] + lines[middle + 1:],
                   "missing": lines[:middle] + lines[middle + 1:],
                   "reversed": _reversed_steps(list(lines), at)}
        if log.name.startswith("slime"):  # a slime step is two lines (step N, perf N): deleting one loses a field
            del damaged["missing"]
        for how, text in damaged.items():
            path = folder / f"{log.stem}-{how}{log.suffix}"
            path.write_text("".join(text), encoding="utf-8")
            made[f"{log.stem}-{how}"] = path
    return made


def _swap(lines: list[str], a: int, b: int) -> list[str]:
    lines[a], lines[b] = lines[b], lines[a]
    return lines


def _reversed_steps(lines: list[str], at: list[int]) -> list[str]:
    steps = [lines[i] for i in at]
    for i, line in zip(at, reversed(steps), strict=True):
        lines[i] = line
    return lines


def step_reader_cases(scratch: _Scratch) -> list[Case]:
    """One reader of step lines: every command that reads a log refuses the same damage (exit 2)."""
    cases = []
    for name, log in _damaged_logs(scratch.folder()).items():
        for command, argv in (("measure", ["measure", str(log), "--window", "0", "1"]),
                              ("check convergence", ["check", "convergence", "--candidate", str(log), "--reference",
                                                     str(log)]),
                              ("check convergence", ["check", "convergence", "--candidate", str(GOOD_LOG),
                                                     "--reference", str(log)]),
                              ("reproduce", ["reproduce", str(REPO / STOCK), str(log)])):
            cases.append(Case(f"{command}/{name}/{len(cases)}", command, argv, str(scratch.root), expect=BAD))
    return cases


EMPTY_CONVERSATIONS = {
    "empty": "", "blank-lines": "\n\n \n\t\n", "crlf-blank": "\r\n\r\n", "only-invalid": "nope\n{\"x\": 1}\n[]\n",
    "only-system": '{"messages": [{"role": "system", "content": "hi"}]}\n' * 3,
    "empty-messages": '{"messages": []}\n' * 3, "only-user": '{"messages": [{"role": "user", "content": "hi"}]}\n',
    "null-lines": "null\nnull\n", "numbers": "1\n2\n3\n", "bom-only": "\ufeff\n",
}


def rows_input_cases(scratch: _Scratch, tokenizer: Path) -> list[Case]:
    """A data set with nothing in it builds no rows.parquet: exit 2."""
    cases = []
    for name, text in EMPTY_CONVERSATIONS.items():
        folder = scratch.folder()
        source = folder / "conversations.jsonl"
        source.write_text(text, encoding="utf-8")
        for chat_format in ("qwen3",):  # (template loads transformers: over the worker's 1 GiB; tested apart)
            argv = ["rows", "build", "--conversations", str(source), "--tokenizer", str(tokenizer), "--chat-format",
                    chat_format, "--rows", "2", "--row-tokens", "64", "--seed", "1", "--out", str(folder / chat_format),
                    "--workers", "0"]
            cases.append(Case(f"rows build/{name}-{chat_format}", "rows build", argv, str(folder), expect=BAD))
    return cases


def date_cases(scratch: _Scratch) -> list[Case]:
    """Dates no run of these engines can have: exit 1 naming the field."""
    cases = []
    tomorrow = (datetime.date.today() + datetime.timedelta(days=1)).isoformat()
    for day in ("1900-01-01", "2019-12-31", "2099-01-01", tomorrow, "0001-01-01", "9999-12-31", "1970-01-01"):
        for field, old in (("result.measured", "  measured: 2026-11-30"),
                           ("reproductions.0.date", "  - date: '2026-11-30'")):
            new = old.replace("2026-11-30", day)
            root = qwen_catalog(scratch, lambda text, o=old, n=new: text.replace(o, n, 1))
            cases.append(Case(f"validate/{field}={day}", "validate", ["validate", str(root / OURS), "--catalog",
                                                                      str(root)], str(root), expect=(1,)))
    return cases


def record_cases(scratch: _Scratch) -> list[Case]:
    """record on run folders a stranger made: a command.sh that is not UTF-8, a FIFO, a folder, a loop."""
    cases = []
    makers: dict[str, Callable[[Path], object]] = {
        "non-utf8": lambda p: p.write_bytes(b"torchrun \xff\xfe --x\n"), "fifo": os.mkfifo, "folder": Path.mkdir,
        "loop": lambda p: p.symlink_to(p), "empty": lambda p: p.write_text(""), "huge": lambda p: p.write_text(
            "torchrun " + "x" * (2 * 2**20)), "nul": lambda p: p.write_bytes(b"torchrun\0--x\n")}
    for name, make in makers.items():
        root = qwen_catalog(scratch)
        run = root / "runs/stranger"
        shutil.copytree(root / RERUN / "stock", run)
        make(run / "command.sh")
        cases.append(Case(f"record/command.sh-{name}", "record", ["record", "runs/stranger", "--like", STOCK,
                                                                  "--name", "x"], str(root), expect=(1, 2)))
    for name, run in (("missing", "runs/nope"), ("a-file", f"{RERUN}/stock/train.log"), ("outside", "/etc"),
                      ("candidate-again", CANDIDATE)):
        root = qwen_catalog(scratch)
        cases.append(Case(f"record/run-{name}", "record", ["record", run, "--like", STOCK, "--name", "x"], str(root),
                          expect=(1, 2)))
    return cases


BASE_ARGV = {  # a valid call of each command, for the option sweeps; OUT is a new path per case
    ("plan", "model"): ["plan", "qwen3-8b", "--gpu", "H200", "--gpus", "2"],
    ("tune",): ["tune", "qwen3-8b", "--gpu", "H200", "--gpus", "2", "--budget-minutes", "5", "--dry-run"],
    ("measure",): ["measure", str(GOOD_LOG), "--window", "0", "2"],
    ("launch",): ["launch", STOCK, "--slurm"],
    ("run",): ["run", "--dry-run", STOCK],
    ("reproduce",): ["reproduce", STOCK, f"{RERUN}/stock/train.log"],
}
INT_VALUES = ["nan", "inf", "-1", "-0", "1e400", "9" * 30, "0x10", "1.5", "½", "١"]
FLOAT_VALUES = ["nan", "-nan", "inf", "-inf", "-1", "1e400", "-1e-400", "0x1p3", "x"]
BLANK_VALUES = ["", " ", "\t", "\n"]


def leaf_commands() -> dict[tuple[str, ...], list]:
    """Every command of the CLI by its words, with its click parameters."""
    from openrecipes.cli import command_tree

    found, pending = {}, [((), command_tree())]
    while pending:
        words, command = pending.pop()
        children = getattr(command, "commands", None)
        if children:
            pending += [((*words, name), child) for name, child in children.items()]
        else:
            found[words] = command.params
    return found


def option_cases(scratch: _Scratch) -> list[Case]:
    """Every value option of every command given an empty value (exit 2), and every number option of the commands
    in BASE_ARGV given a value that is not a finite count (0, 1 or 2; never a traceback)."""
    cases, root = [], qwen_catalog(scratch)
    for words, params in sorted(leaf_commands().items()):
        options = [p for p in params if p.param_type_name == "option" and not getattr(p, "is_flag", True)]
        for option in options:
            name = option.opts[0]
            for i, blank in enumerate(BLANK_VALUES):
                cases.append(Case(f"{' '.join(words)}/{name}-blank-{i}", " ".join(words),
                                  [*words, name, blank], str(root), expect=BAD))
            cases.append(Case(f"{' '.join(words)}/{name}=", " ".join(words), [*words, f"{name}="], str(root),
                              expect=BAD))
            base = BASE_ARGV.get(words)
            kind = option.bare_type()
            if base is None or kind not in ("int", "float") or option.nargs != 1:
                continue
            for value in INT_VALUES if kind == "int" else FLOAT_VALUES:
                cases.append(Case(f"{' '.join(words)}/{name}={value}", " ".join(words), [*base, name, value],
                                  str(root)))
    # A command with no value option (refresh): its usage refused all the same (a real refresh re-fits the planner,
    # seconds of work, and is run by CI itself as `refresh --check`).
    cases.append(Case("refresh/unknown-option", "refresh", ["refresh", "--catalog-of-strangers"], str(root),
                      expect=BAD))
    # Another command with no value option: a model that is not a card, and an option it does not take.
    cases += [Case(f"plan compare/{i}", "plan compare", ["plan", "compare", *argv], str(root), expect=BAD)
              for i, argv in enumerate([["no-such-model"], ["qwen3-8b", "--gpu", "H200"], ["../../etc/passwd"]])]
    port = str(held_port())
    for i, host in enumerate(["", " ", "0.0.0.0\0", "::", "localhost:80", "http://x", "a" * 300]):
        cases.append(Case(f"serve/host-{i}", "serve", ["serve", "--host", host, "--port", port], str(root)))
    return cases


def hostile_cases(scratch: _Scratch, tokenizer: Path | None) -> list[Case]:
    cases = (output_cases(scratch, tokenizer) + evidence_cases(scratch) + reproduction_cases(scratch)
             + step_reader_cases(scratch) + date_cases(scratch) + record_cases(scratch) + option_cases(scratch))
    if tokenizer is not None:
        cases += rows_input_cases(scratch, tokenizer)
    return cases
