"""Contributed evidence that is not a training log, handed to every command that accepts one (`measure`,
`reproduce`, `reproduce --write`, `record`): pages, images and scripts of every kind a browser runs with a new run's
step lines inside a comment (refused: exit 2, the recipe untouched, no recipe written), and files that are not text
(binary, NUL bytes, other encodings, a file over the size limit, a line over 1 MiB) or are cut short (the contract:
0, 1 or 2, one line, no traceback).

Every input is made here from the catalog's own logs, retimed so that each is a new run (a copy of a cited log is
refused for another reason); `python tests/fuzz/run.py` runs them with the rest.
"""

from __future__ import annotations

import datetime
import gzip
import os
import random
import re
from collections.abc import Callable
from pathlib import Path

from cases import _Scratch
from hostile_cases import BAD, OURS, RERUN, STOCK, qwen_catalog
from make_corpus import REPO
from run import Case

FIXTURES = REPO / "tests/fixtures/logs"
PAYLOAD = "window.__pwned=1"


def new_run(text: str) -> str:
    """The log of another run: every timestamp an hour and a few milliseconds per line later (its own step times)."""
    shift = datetime.timedelta(hours=1)
    count = 0

    def later(match: re.Match) -> str:
        nonlocal count
        count += 1
        stamp = datetime.datetime.strptime(match.group(0), "%Y-%m-%d %H:%M:%S,%f")
        return (stamp + shift + datetime.timedelta(milliseconds=7 * count)).strftime("%Y-%m-%d %H:%M:%S,%f")[:-3]

    return re.sub(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3}", later, text)


# A page, an image or a script with the log inside a comment, each with a payload that runs where the file is
# taken for what its name says: (file name, wrap(log) -> text).
WRAPPERS: list[tuple[str, Callable[[str], str]]] = [
    ("comment.html", lambda log: f"<!doctype html><script>{PAYLOAD}</script>\n<!--\n{log}-->\n"),
    ("script-after.html", lambda log: f"<!--\n{log}-->\n<script>{PAYLOAD}</script>\n"),
    ("script-src.html", lambda log: f"<html>\n<!--\n{log}-->\n<script src=evil.js></script>\n"),
    ("onerror.htm", lambda log: f"{log}<img src=x onerror={PAYLOAD}>\n"),
    ("split-tag.htm", lambda log: f"{log}<img\nsrc=x\nonerror={PAYLOAD}>\n"),
    ("slash-attr.html", lambda log: f"{log}<svg/onload={PAYLOAD}>\n"),
    ("iframe.html", lambda log: f"{log}<iframe srcdoc='<script>{PAYLOAD}</script>'>\n"),
    ("refresh.html", lambda log: f"{log}<meta http-equiv=refresh content='0;url=javascript:{PAYLOAD}'>\n"),
    ("link.html", lambda log: f"{log}<a href=javascript:{PAYLOAD}>steps</a>\n"),
    ("body-onload.html", lambda log: f"<body onload={PAYLOAD}>\n{log}"),
    ("uppercase.html", lambda log: f"<SCRIPT>{PAYLOAD}</SCRIPT>\n{log}"),
    ("page.xhtml", lambda log: f"<?xml version=\"1.0\"?>\n<html xmlns=\"http://www.w3.org/1999/xhtml\">"
                               f"<script>{PAYLOAD}</script>\n<!--\n{log}-->\n</html>\n"),
    ("image.svg", lambda log: f"<svg xmlns=\"http://www.w3.org/2000/svg\" onload=\"{PAYLOAD}\">\n<!--\n{log}-->\n"
                              "</svg>\n"),
    ("script.svg", lambda log: f"<svg xmlns=\"http://www.w3.org/2000/svg\"><script>{PAYLOAD}</script>\n<!--\n{log}"
                               "-->\n</svg>\n"),
    ("cdata.xml", lambda log: f"<x><![CDATA[\n{log}]]></x>\n"),
    ("stylesheet.xml", lambda log: f"<?xml-stylesheet href=\"evil.xsl\"?>\n{log}"),
    ("block.js", lambda log: f"/*\n{log}*/\n{PAYLOAD};\n"),
    ("block-midline.js", lambda log: f"{PAYLOAD}; /*\n{log}*/\n"),
    ("lines.js", lambda log: "".join(f"// {line}\n" for line in log.splitlines()) + f"{PAYLOAD};\n"),
    ("expression-lines.js", lambda log: "".join(f"1 // {line}\n" for line in log.splitlines()) + f"{PAYLOAD};\n"),
    ("html-comments.js", lambda log: "".join(f"<!-- {line}\n" for line in log.splitlines()) + f"{PAYLOAD};\n"),
    ("arrow-comments.mjs", lambda log: "".join(f"--> {line}\n" for line in log.splitlines()) + f"{PAYLOAD};\n"),
    ("hash-comments.html", lambda log: "".join(f"# {line}\n" for line in log.splitlines()) + f"<b onclick={PAYLOAD}>"),
    ("quoted.js", lambda log: "".join(f"'{line}',\n" for line in log.splitlines()) + f"{PAYLOAD};\n"),
]


def _not_text(log: str) -> dict[str, bytes]:
    """The log as bytes no training run writes: other encodings, binary, NUL and control bytes."""
    data = log.encode("utf-8")
    rng = random.Random(48)
    middle = len(data) // 2
    return {
        "utf16le.log": b"\xff\xfe" + log.encode("utf-16-le"), "utf16be.log": b"\xfe\xff" + log.encode("utf-16-be"),
        "utf32.log": log.encode("utf-32"), "latin1.log": (log + "caf\u00e9\n").encode("latin-1", "replace"),
        "invalid-middle.log": data[:middle] + b"\xff\xfe\xc0\xaf" + data[middle:],
        "overlong-slash.log": data[:middle] + b"\xc0\xaf\n" + data[middle:],
        "surrogate.log": data[:middle] + b"\xed\xa0\x80\n" + data[middle:],
        "nul-middle.log": data[:middle] + b"\0" + data[middle:], "nul-every-line.log": data.replace(b"\n", b"\0\n"),
        "formfeed.log": data[:middle] + b"\x0c" + data[middle:],
        "backspace.log": data[:middle] + b"\x08\x08" + data[middle:],
        "del.log": data[:middle] + b"\x7f" + data[middle:], "bell.log": b"\x07" + data,
        "random.bin": bytes(rng.getrandbits(8) for _ in range(50_000)), "zeros.bin": bytes(50_000),
        "gzip.log.gz": gzip.compress(data, mtime=0), "png.log": b"\x89PNG\r\n\x1a\n" + data,
        "elf.log": b"\x7fELF\x02\x01\x01" + data,
        "long-line.log": data + b"x" * (2**20 + 10) + b"\n", "long-last-line.log": data + b"y" * (2**20 + 10),
    }


def _cut(log: str) -> dict[str, bytes]:
    """The log cut short at several places (some still measurable, some not), and other harmless shapes."""
    data = log.encode("utf-8")
    cuts = {f"cut-{percent}pct.log": data[:len(data) * percent // 100] for percent in (1, 10, 35, 50, 65, 90, 99)}
    return {**cuts, "cut-mid-character.log": data + "\u00e9".encode()[:1], "empty.log": b"", "blank.log": b"\n \n\t\n",
            "crlf.log": data.replace(b"\n", b"\r\n"), "bom.log": b"\xef\xbb\xbf" + data,
            "no-final-newline.log": data.rstrip(b"\n"), "cr-only.log": data.replace(b"\n", b"\r"),
            "pdf-first-line.log": b"%PDF-1.7\n" + data}  # text with a first line of its own: read as a log


def _stock_run() -> str:
    """The stock recipe's run command, as its YAML holds it."""
    import yaml

    return yaml.safe_load((REPO / STOCK).read_text(encoding="utf-8"))["run"].rstrip("\n")


STOCK_RUN = _stock_run()


def _logs() -> dict[str, str]:
    """The new runs each wrapper and change is applied to: a torchtitan run of the recipe, and the other engines'."""
    return {"titan": new_run((REPO / RERUN / "stock/train.log").read_text(encoding="utf-8")),
            "megatron": (FIXTURES / "megatron-bridge-3-iterations.log").read_text(encoding="utf-8"),
            "slime": (FIXTURES / "slime-gpt-oss-20b-attune-tp1-pp1-ep4.log").read_text(encoding="utf-8"),
            "jsonl": (FIXTURES / "openrecipes-3-steps.jsonl").read_text(encoding="utf-8")}


def _commands(root: Path, log: Path, name: str, expect: tuple[int, ...]) -> list[Case]:
    """`log` (under root's runs/) before each command that accepts evidence; a refused one writes nothing."""
    relative, run = str(log.relative_to(root)), log.parent  # record reads run/train.log
    recorded = "fuzz-" + run.name.replace(".", "-")
    keep = (str(root / OURS), str(root / STOCK), str(root / f"recipes/qwen3-8b/h200/{recorded}.yaml"))
    return [
        Case(f"measure/evidence-{name}", "measure", ["measure", relative, "--window", "5", "19"], str(root),
             expect=expect),
        Case(f"reproduce/evidence-{name}", "reproduce", ["reproduce", OURS, relative], str(root), expect=expect),
        Case(f"reproduce --write/evidence-{name}", "reproduce", ["reproduce", OURS, relative, "--write", "--by",
                                                                 "a stranger"], str(root), expect=expect,
             keep=keep if expect == BAD else ()),
        Case(f"record/evidence-{name}", "record", ["record", str(run.relative_to(root)), "--like", STOCK, "--name",
                                                   recorded], str(root), expect=expect,
             keep=keep if expect == BAD else ()),
    ]


def _place(root: Path, name: str, data: bytes) -> Path:
    """The file as a run folder's train.log (record's input), beside a command of a layout the catalog has no recipe
    of (the stock recipe's, resharding never), so that nothing but the log is in record's way."""
    run = root / "runs/evidence" / re.sub(r"[^\w.-]", "-", name)
    run.mkdir(parents=True)
    (run / "train.log").write_bytes(data)
    (run / "command.sh").write_text(STOCK_RUN + " \\\n    --parallelism.fsdp_reshard_after_forward never\n",
                                    encoding="utf-8")
    return run / "train.log"


def _cases(shared: Path, own: Path, name: str, data: bytes, expect: tuple[int, ...]) -> list[Case]:
    """The file before each command that accepts evidence: the readers in `shared`, the writers (which must write
    nothing for a refused file) in a catalog of their own, so that one input's outcome never depends on another's."""
    read, write = _place(shared, name, data), _place(own, name, data)
    recorded = "fuzz-" + write.parent.name.replace(".", "-")
    keep = (str(own / OURS), str(own / f"recipes/qwen3-8b/h200/{recorded}.yaml")) if expect == BAD else ()
    return [
        Case(f"measure/evidence-{name}", "measure", ["measure", str(read.relative_to(shared)), "--window", "5", "19"],
             str(shared), expect=expect),
        Case(f"reproduce/evidence-{name}", "reproduce", ["reproduce", OURS, str(read.relative_to(shared))],
             str(shared), expect=expect),
        Case(f"reproduce --write/evidence-{name}", "reproduce", ["reproduce", OURS, str(write.relative_to(own)),
                                                                 "--write", "--by", "a stranger"], str(own),
             expect=expect, keep=keep),
        Case(f"record/evidence-{name}", "record", ["record", str(write.parent.relative_to(own)), "--like", STOCK,
                                                   "--name", recorded], str(own), expect=expect, keep=keep),
    ]


def evidence_cases(scratch: _Scratch) -> list[Case]:
    cases: list[Case] = []
    shared = qwen_catalog(scratch)  # read only: measure and reproduce without --write
    logs = _logs()
    for kind, log in logs.items():
        for name, wrap in WRAPPERS:
            cases += _cases(shared, qwen_catalog(scratch), f"{kind}-{name}", wrap(log).encode("utf-8"), BAD)
    for name, data in _not_text(logs["titan"]).items():
        cases += _cases(shared, qwen_catalog(scratch), name, data, BAD)
    for name, data in _cut(logs["titan"]).items():  # may be measured and written
        cases += _cases(shared, qwen_catalog(scratch), name, data, (0, 1, 2))
    own = qwen_catalog(scratch)  # over the size limit: a sparse file, refused before a byte is read
    cases += _cases(shared, own, "over-4-gib", b"", BAD)
    for root in (shared, own):
        os.truncate(root / "runs/evidence/over-4-gib/train.log", 4 * 2**30 + 1)
    return cases
