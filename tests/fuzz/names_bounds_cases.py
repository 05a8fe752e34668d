"""Names that are not names and readers without a bound, as fuzz cases: `record --name`, `--like` and run folders
that would write outside the catalog; `model add --name` over another card's config; model cards whose config is a
FIFO, a device, a link out, another file or a second card of one model; chat templates that loop, multiply, recurse
or escape the sandbox, and malformed tokenizer.json files; `schema --check` over a FIFO or a link to /dev/zero; `plan`
options at and past their limits. Each must end in exit 0, 1 or 2 with one line, touching nothing it was not asked to.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

from cases import _Scratch
from make_corpus import HERE, REPO
from run import Case

from openrecipes.catalog.hf_config import NAME

STOCK = "recipes/qwen3-8b/h200/torchtitan-stock-fsdp2.yaml"
RERUN_STOCK = "runs/reproductions/qwen3-8b-h200x2-rerun-20261130/stock"
BAD = (2,)
# A plain name (openrecipes.names): the record cases give only names that are not one.
PLAIN_NAME = re.compile(r"(?!.*\.\.)[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
HOSTILE_NAMES = [
    "..", ".", "../x", "../../x", "../../../../../../tmp/escaped", "a/b", "/abs", "/etc/passwd", ".hidden", "-dash",
    "a b", "a\tb", "a\nb", "a\rb", "x" * 101, "x" * 5000, "ünï", "日本語", "a\u202eb", "a..b", "a:b", "a*b",
    "a?b", "a\\b", "a%2fb", "~", "~/x", "$HOME", "`id`", "a;b", "a|b", "'q'", '"q"', "a\x7fb", "\u200b", "a\x1bb",
    "x.yaml/..", "recipes", "...", "a/", "/", "\\", "a\u0301", "ＡＢＣ", "a\u2028b", "%s%n", "{name}", "a>b", "a<b",
    "COM1", "nul", "a\x00b", "\ud800", "A" * 100 + "/..", "./a", "a/./b", "a//b", "-", "_",
]
MARKED = ("{% for m in messages %}{{ m.role }}: {% if m.role == 'assistant' %}{% generation %}{{ m.content }}"
          "{% endgeneration %}{% else %}{{ m.content }}{% endif %}\n{% endfor %}")
TEMPLATES = [
    "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
    "{% for i in range(99999) %}{% for j in range(99999) %}{{ '' }}{% endfor %}{% endfor %}",
    "{% for m in messages %}{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
    "{% endfor %}",
    "{{ 'x' * 10**10 }}", "{{ 10**10 * 'x' }}", "{{ ['x'] * 10**10 }}", "{{ 'ab' * 99999999 }}",
    "{{ 10 ** 100000000 }}", "{{ 7 ** 7 ** 7 ** 7 }}",
    "{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
    "{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}{% endfor %}",
    "{% set ns = namespace(s=['a']) %}{% for i in range(60) %}{% set ns.s = ns.s + ns.s %}{% endfor %}",
    "{{ 'x'|center(10**10) }}", "{{ 'x'|indent(10**10) }}", "{{ 'x'.ljust(10**10) }}", "{{ 'x'.zfill(10**10) }}",
    "{{ 'x'.rjust(10**10) }}", "{{ '\\t'.expandtabs(10**10) }}", "{{ '%999999999d'|format(1) }}",
    "{{ '%999999999d' % 1 }}", "{{ '{:>999999999}'.format(1) }}", "{{ '%.999999999f' % 1.0 }}",
    "{% set s = 'a' * 1000000 %}{{ s|replace('a', s) }}", "{% set s = 'a' * 1000000 %}{{ s.replace('a', s) }}",
    "{% set s = 'a' * 1000000 %}{{ s.join([s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s]) }}",
    "{% set s = 'a' * 1000000 %}{{ [s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s]|join(s) }}",
    "{% macro f(n) %}{% if n > 0 %}{{ f(n-1) }}{{ f(n-1) }}{% endif %}{% endmacro %}{{ f(60) }}",
    "{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}",
    "{% for m in messages recursive %}{{ loop([messages]) }}{% endfor %}",
    "{{ ''.__class__.__mro__[1].__subclasses__() }}", "{{ cycler.__init__.__globals__ }}",
    "{{ namespace.__init__.__globals__.os.system('id') }}", "{{ self._TemplateReference__context }}",
    "{{ lipsum.__globals__['os'].popen('id').read() }}", "{{ ().__class__.__base__.__subclasses__() }}",
    "{{ messages.append(1) }}", "{{ dict.__subclasses__() }}", "{{ raise_exception('no') }}", "{{ 1 // 0 }}",
    "{{ 1 % 0 }}", "{{ nothing() }}", "{{ messages[10**9] }}", "{% for %}", "{% if %}", "{{", "{% endfor %}",
    "{% generation %}", "{% include 'x' %}", "{% import 'x' as y %}", "{% extends 'base' %}",
    "{{ range(10**9)|list }}", "{{ 'x'|wordwrap(10**10) }}", "{{ 'x'|truncate(10**10) }}",
    "{{ strftime_now('%Y' * 10**8) }}", "{{ (messages|tojson) * 10**8 }}",
]
TOKENIZER_JSONS = ['{"version": "1.0", "model": 5}', "{not json", "[]", '{"added_tokens": [{"id": "x"}]}', "",
                   "null", "1e999", '"text"', "[" * 100000 + "]" * 100000, '{"model": {"type": "BPE"}}',
                   '{"model": {"type": "WordLevel", "vocab": {"a": -1}}}', "\xff\xfe", '{"truncation": 5}',
                   '{"pre_tokenizer": {"type": "Split", "pattern": {"Regex": "("}}}', "{" * 5000]


def names_bounds_cases(scratch: _Scratch) -> list[Case]:
    """The cases the corpus runs under the worker's 1 GiB; the chat templates (transformers' import alone maps more
    than that) run in tests/test_rows_template_bounds.py with a larger cap."""
    return _record_cases(scratch) + _model_add_cases(scratch) + _card_cases(scratch) + _schema_cases(scratch) \
        + _plan_cases()


def _qwen_catalog(scratch: _Scratch) -> Path:
    root = scratch.folder()
    for folder in ("models", "hardware", "recipes/qwen3-8b", "runs/qwen3-8b-h200x2-torchtitan-stock",
                   "runs/qwen3-8b-h200x2-openrecipes-fsdp2-compile-noac-mb1", "runs/reproductions"):
        shutil.copytree(REPO / folder, root / folder)
    shutil.copytree(REPO / RERUN_STOCK, root / "runs/my-run")
    # A new configuration of the stock recipe, so that a record the names let through is written (and seen).
    from openrecipes.catalog.store import load_recipe  # noqa: PLC0415 (the package under test, imported late)

    (root / "runs/my-run/command.sh").write_text(load_recipe(REPO / STOCK).run.rstrip("\n")
                                                 + " \\\n    --parallelism.fsdp_reshard_after_forward never\n")
    return root


def _record_cases(scratch: _Scratch) -> list[Case]:
    root = _qwen_catalog(scratch)
    keep = (str(root), str(root / "recipes"), str(root / "recipes/qwen3-8b"), str(root / "recipes/qwen3-8b/h200"),
            str(root / "runs"), str(scratch.root))
    cases = [Case(f"record/name-{i}", "record", ["record", "runs/my-run", "--like", STOCK, "--name", name],
                  str(root), BAD, keep=keep) for i, name in enumerate(HOSTILE_NAMES)
             if "\x00" not in name and not PLAIN_NAME.fullmatch(name)]
    outside = scratch.folder()
    shutil.copytree(root / "runs/my-run", outside / "loose-run")
    fifo = outside / "fifo"
    os.mkfifo(fifo)
    (outside / "link-out").symlink_to("/etc")
    (root / "runs/link-out").symlink_to(outside / "loose-run")
    for i, run_dir in enumerate([outside / "loose-run", fifo, outside / "link-out", root / "runs/link-out",
                                 "runs/../../x", "/", "runs/my-run/../../runs/my-run/../..", "/dev/null"]):
        cases.append(Case(f"record/run-folder-{i}", "record", ["record", str(run_dir), "--like", STOCK, "--name",
                                                                f"fine-{i}"], str(root), BAD, keep=keep))
    for i, like in enumerate(["/etc/passwd", "/dev/zero", str(fifo), str(outside / "link-out"), "recipes",
                              "../x.yaml"]):
        cases.append(Case(f"record/like-{i}", "record", ["record", "runs/my-run", "--like", like, "--name",
                                                          f"fine-{i}"], str(root), BAD, keep=keep))
    return cases


def _models(scratch: _Scratch) -> Path:
    root = scratch.folder()
    shutil.copytree(REPO / "models", root / "models")
    return root / "models"


def _model_add_cases(scratch: _Scratch) -> list[Case]:
    models = _models(scratch)
    keep = (str(models), str(models / "configs"), str(models.parent))
    config = str(REPO / "models/configs/mixtral-8x7b.json")
    cases = [Case(f"model add/name-{i}", "model add", ["model", "add", config, "--name", name, "--out",
                                                       str(models / "new.yaml")], str(models.parent), BAD, keep=keep)
             for i, name in enumerate(HOSTILE_NAMES) if "\x00" not in name and not NAME.fullmatch(name)]
    for card in sorted((REPO / "models").glob("*.yaml")):
        own = models / "configs" / f"{card.stem}.json"
        if own.exists():  # a derived card: its config must not be replaced under it
            cases.append(Case(f"model add/other-card-{card.stem}", "model add",
                              ["model", "add", config, "--name", card.stem, "--out", str(models / "other.yaml")],
                              str(models.parent), BAD, keep=(*keep, str(own))))
    return cases


def _card_cases(scratch: _Scratch) -> list[Case]:
    damages = {
        "edited": lambda path: path.write_text(path.read_text() + " "),
        "fifo": lambda path: (path.unlink(), os.mkfifo(path)),
        "dev-zero": lambda path: (path.unlink(), path.symlink_to("/dev/zero")),
        "link-out": lambda path: (path.unlink(), path.symlink_to(REPO / "models/configs/qwen3-8b.json")),
        "folder": lambda path: (path.unlink(), path.mkdir()),
        "loop": lambda path: (path.unlink(), path.symlink_to(path.name)),
    }
    cases = []
    for card in sorted((REPO / "models").glob("*.yaml")):
        if not (REPO / "models/configs" / f"{card.stem}.json").exists():
            continue
        for damage, make in damages.items():
            models = _models(scratch)
            make(models / "configs" / f"{card.stem}.json")
            shutil.copytree(REPO / "hardware", models.parent / "hardware")
            (models.parent / "recipes").mkdir()
            command = "validate" if damage != "edited" else "list"
            cases.append(Case(f"{command}/card-config-{damage}-{card.stem}", command,
                              [command, "--catalog", str(models.parent)], str(models.parent), BAD))
        models = _models(scratch)
        shutil.copy(card, models / f"{card.stem}-again.yaml")
        shutil.copytree(REPO / "hardware", models.parent / "hardware")
        (models.parent / "recipes").mkdir()
        cases.append(Case(f"validate/two-cards-{card.stem}", "validate", ["validate", "--catalog", str(models.parent)],
                          str(models.parent), BAD))
    return cases


def _schema_cases(scratch: _Scratch) -> list[Case]:
    makers = {
        "fifo": os.mkfifo, "dev-zero": lambda p: p.symlink_to("/dev/zero"), "dev-null": lambda p: p.symlink_to(
            "/dev/null"), "link-out": lambda p: p.symlink_to(REPO / "schema/recipe.schema.yaml"), "folder": os.mkdir,
        "loop": lambda p: p.symlink_to(p.name), "not-utf8": lambda p: p.write_bytes(b"\xff\xfe" * 100),
        "huge": lambda p: p.write_bytes(b"x" * (5 * 2**20)), "dangling": lambda p: p.symlink_to("nowhere"),
        "proc": lambda p: p.symlink_to("/proc/self/mem"),
    }
    cases = []
    for name, make in makers.items():
        root = scratch.folder()
        (root / "schema").mkdir()
        make(root / "schema/recipe.schema.yaml")
        cases.append(Case(f"schema/check-{name}", "schema", ["schema", "--check", "--root", str(root)], str(root),
                          (1, 2), keep=(str(root / "schema/recipe.schema.yaml"),)))
    return cases


def _plan_cases() -> list[Case]:
    cases = []
    for card in sorted((REPO / "models").glob("*.yaml")):
        for option, value in (("--gpus", "8200"), ("--gpus", str(2**20)), ("--global-batch", str(2**15 + 1)),
                              ("--global-batch", str(2**24)), ("--row-tokens", str(2**20 + 1))):
            args = {"--gpus": "8", **{option: value}}
            cases.append(Case(f"plan/limit-{card.stem}{option}={value}", "plan",
                              ["plan", card.stem, "--gpu", "H200", *[x for pair in args.items() for x in pair]],
                              str(HERE), BAD))
    cases.append(Case("plan/at-limit-gpus", "plan", ["plan", "qwen3-0.6b", "--gpu", "H200", "--gpus", "8192",
                                                     "--top", "1"], str(HERE)))
    return cases


def template_cases(scratch: _Scratch, tokenizer: Path) -> list[Case]:
    config = json.loads((tokenizer / "tokenizer_config.json").read_text())
    cases = []

    def build(name: str, folder: Path) -> Case:
        return Case(f"rows build/{name}", "rows build",
                    ["rows", "build", "--conversations", str(REPO / "tests/fixtures/rows/conversations.jsonl"),
                     "--tokenizer", str(folder), "--chat-format", "template", "--rows", "1", "--row-tokens", "64",
                     "--seed", "1", "--out", str(folder.parent / "rows"), "--workers", "0"], str(HERE))

    for i, template in enumerate(TEMPLATES):
        folder = scratch.folder() / "tokenizer"
        folder.mkdir()
        (folder / "tokenizer.json").symlink_to(tokenizer / "tokenizer.json")
        (folder / "tokenizer_config.json").write_text(json.dumps({**config, "chat_template": template + MARKED}))
        cases.append(build(f"template-{i}", folder))
    for i, text in enumerate(TOKENIZER_JSONS):
        folder = scratch.folder() / "tokenizer"
        folder.mkdir()
        (folder / "tokenizer.json").write_text(text, encoding="utf-8", errors="surrogateescape")
        (folder / "tokenizer_config.json").write_text(json.dumps({**config, "chat_template": MARKED}))
        cases.append(build(f"tokenizer-json-{i}", folder))
    return cases
