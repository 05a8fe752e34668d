"""The seal of each Plan page's plans/<model>.json: a hash of what the file was computed from and of the file itself.

A plan file's `fingerprint` is the sha256 of (1) the export's inputs: the code that computes a plan (the modules
`openrecipes.tune.export` imports, directly or not, from the planner, the tuner, the engines' knowledge and the two
writers of a planned recipe's text: the torchtitan renderer and `audit.record`), the planner's data
(calibration.yaml, heldout.json, ...), the catalog's recipes, record, model cards and hardware tables; (2) the file's
name; (3) the file's own text with the fingerprint left empty. A changed input makes every file stale; an edited
figure, a file copied over another model's, or one cut short no longer matches its own seal; `refresh --check`
fails on either (exit 1) and `openrecipes refresh` writes them again.

The inputs are hashed as what they mean, not as bytes: code as its syntax tree without comments and docstrings, YAML
and JSON as their parsed data, recipes and cards without their notes. A comment, a docstring or a note changes no
figure of a plan, so it leaves the plans current; a module the export does not import (tune/report.py) is not an
input at all.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
from collections.abc import Iterator
from pathlib import Path

from openrecipes.catalog.store import Catalog
from openrecipes.catalog.yamlio import read_yaml
from openrecipes.errors import UserError
from openrecipes.textfile import MIB, read_text, shown

EXPORT_VERSION = 3
PACKAGE = Path(__file__).resolve().parents[1]  # src/openrecipes
# The export's own module, and the packages whose modules it imports count as its code: the planner, the tuner, the
# engines' knowledge (their layout rules and the flag table a planned recipe is rendered from) and the writers of a
# planned recipe's text.
EXPORT_MODULE = "openrecipes.tune.export"
CODE_PACKAGES = ("openrecipes.plan", "openrecipes.tune", "openrecipes.engines", "openrecipes.launch.torchtitan",
                 "openrecipes.audit.record")
DATA_SUFFIXES = (".yaml", ".json")
MAX_SOURCE_BYTES = 64 * MIB
SEALED = re.compile(r'\{\n "fingerprint": "([0-9a-f]{64})"')


def _without_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and body
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            node.body = body[1:] or [ast.Pass()]
    return tree


def _canonical(node: object) -> str:
    """A syntax tree as text that does not depend on the Python version's optional fields (empty ones are left
    out, as ast.dump leaves them out from 3.13 on but not before)."""
    if isinstance(node, ast.AST):
        fields = [f"{name}={_canonical(value)}" for name, value in ast.iter_fields(node)
                  if value is not None and value != []]
        return f"{type(node).__name__}({','.join(fields)})"
    if isinstance(node, list):
        return "[" + ",".join(map(_canonical, node)) + "]"
    return repr(node)


def _source(path: Path) -> str:
    return read_text(path, MAX_SOURCE_BYTES, "planner source file")


def code_text(path: Path) -> str:
    """A module's code as its syntax tree: comments, docstrings, blank lines and layout left out."""
    try:
        return _canonical(_without_docstrings(ast.parse(_source(path))))
    except (SyntaxError, ValueError) as error:
        raise UserError(f"{shown(path)}: not Python the planner can read ({error}); fix or remove it") from None


def data_text(path: Path) -> str:
    """A YAML or JSON file as its parsed data (comments and layout left out)."""
    if path.suffix == ".json":
        try:
            data = json.loads(_source(path))
        except json.JSONDecodeError as error:
            raise UserError(f"{shown(path)}: not valid JSON ({error}); run `openrecipes refresh`") from None
    else:
        data = read_yaml(path).data
    return json.dumps(data, sort_keys=True, default=str)


def _module_file(name: str) -> Path | None:
    relative = PACKAGE.parent.joinpath(*name.split("."))
    return next((path for path in (relative.with_suffix(".py"), relative / "__init__.py") if path.is_file()), None)


def _imported(tree: ast.AST, package: str) -> Iterator[str]:
    """Every module name an import statement of the module (of `package`) may load, at any depth of its code."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            module = ".".join(filter(None, (base, node.module)))
            yield module
            yield from (f"{module}.{alias.name}" for alias in node.names)


def code_files() -> list[Path]:
    """The export's module and every module of CODE_PACKAGES it imports, directly or not."""
    seen: dict[str, Path] = {}
    pending = [EXPORT_MODULE]
    while pending:
        name = pending.pop()
        path = _module_file(name)
        if name in seen or path is None or not any(name == p or name.startswith(p + ".") for p in CODE_PACKAGES):
            continue
        seen[name] = path
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        pending += _imported(ast.parse(_source(path)), package)
    return sorted(seen.values())


def data_files() -> list[Path]:
    return sorted(p for p in (PACKAGE / "plan").iterdir() if p.suffix in DATA_SUFFIXES)


def fingerprint(catalog: Catalog) -> str:
    """The hash of every input of the export (the module docstring says which)."""
    digest = hashlib.sha256(str(EXPORT_VERSION).encode())
    for files, text in ((code_files(), code_text), (data_files(), data_text)):
        for path in files:
            digest.update(path.relative_to(PACKAGE).as_posix().encode() + b"\0" + text(path).encode() + b"\0")
    tables = catalog.tables
    inputs = {"entries": sorted(json.dumps(e.entry.model_dump(mode="json", exclude={"notes"}), sort_keys=True)
                                for e in catalog.entries),
              "record": sorted(json.dumps([e.slug, e.entry.model_dump(mode="json", exclude={"note"})], sort_keys=True)
                               for e in catalog.record),
              "models": {n: c.model_dump(mode="json", exclude={"notes", "notes_source"})
                         for n, c in tables.models.items()},
              "gpus": {n: g.model_dump(mode="json") for n, g in tables.variants.items()},
              "instances": {n: i.model_dump(mode="json") for n, i in tables.instances.items()}}
    digest.update(json.dumps(inputs, sort_keys=True, default=str).encode())
    return digest.hexdigest()


def _seal(inputs: str, name: str, unsealed: str) -> str:
    return hashlib.sha256(f"{inputs}\0{name}\0{unsealed}".encode()).hexdigest()


def sealed(unsealed: str, inputs: str, name: str) -> str:
    """A plan file's text (written with an empty fingerprint, its first key) with its seal in place."""
    return unsealed.replace('"fingerprint": ""', f'"fingerprint": "{_seal(inputs, name, unsealed)}"', 1)


def seal_problem(text: str, inputs: str, name: str) -> str | None:
    """Why the text of plans/<name>.json is not what the export writes from these inputs, or None."""
    found = SEALED.match(text)
    if found is None:
        return "not a plan file the export wrote"
    unsealed = text[:found.start(1)] + text[found.end(1):]
    if _seal(inputs, name, unsealed) != found.group(1):
        return "edited, or written before the catalog or the planner last changed"
    return None
