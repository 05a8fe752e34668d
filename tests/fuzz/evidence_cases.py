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


def _logs() -> dict[str, str]:
    """The new runs each wrapper and change is applied to: a torchtitan run of the recipe, and the other engines'."""
    return {"titan": new_run((REPO / RERUN / "ours/train.log").read_text(encoding="utf-8")),
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
    """The file as a run folder's train.log (record's input; the --like recipe gives its command)."""
    run = root / "runs/evidence" / re.sub(r"[^\w.-]", "-", name)
    run.mkdir(parents=True)
    (run / "train.log").write_bytes(data)
    return run / "train.log"


def evidence_cases(scratch: _Scratch) -> list[Case]:
    cases: list[Case] = []
    shared = qwen_catalog(scratch)  # refused inputs never write: they share one catalog, kept byte for byte
    for kind, log in _logs().items():
        for name, wrap in WRAPPERS:
            path = _place(shared, f"{kind}-{name}", wrap(log).encode("utf-8"))
            cases += _commands(shared, path, f"{kind}-{name}", BAD)
    titan = _logs()["titan"]
    for name, data in _not_text(titan).items():
        cases += _commands(shared, _place(shared, name, data), name, BAD)
    for name, data in _cut(titan).items():  # may be measured and written: a catalog each
        root = qwen_catalog(scratch)
        cases += _commands(root, _place(root, name, data), name, (0, 1, 2))
    root = qwen_catalog(scratch)  # over the size limit: a sparse file, refused before a byte is read
    huge = _place(root, "huge", b"")
    with huge.open("r+b") as handle:
        handle.truncate(4 * 2**30 + 1)
    cases += _commands(root, huge, "over-4-gib", BAD)
    return cases
