"""The import graph of src/: rooms import only downward, and the named rules of docs/architecture.md hold.

A room is a top-level module or package of `openrecipes`. A new room must be given a floor here, so the rule cannot
be bypassed by adding one.
"""

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "openrecipes"

FLOORS = {
    "figures": 1, "thresholds": 1, "atomic": 1, "errors": 1, "jsonout": 1, "textfile": 1, "steptable": 1, "names": 1,
    "digest": 1, "verdict": 1, "forked": 1, "yamledit": 1, "__init__": 1,
    "rows": 2,
    "engines": 3,
    "catalog": 4,
    "plan": 5, "probe": 5, "record": 5,
    "measure": 6,
    "verify": 7,
    "audit": 8,
    "launch": 9,
    "tune": 10,
    "answer": 11,
    "site": 12, "refresh": 12,
    "cli": 13,
    "__main__": 14,
}

# Rules beyond "downward only" (importer room -> rooms it must not import).
FORBIDDEN = {
    "rows": {"catalog"},
    "site": {"launch", "tune"},
    "tune": {"site"},
    "probe": {"plan"},  # the planner reads the probe's tables, never the other way
}
# The predictor: the site reads exported plan tables and never runs these.
PREDICTOR = {"openrecipes.plan.predict", "openrecipes.plan.speed", "openrecipes.plan.comm", "openrecipes.plan.memory",
             "openrecipes.plan.calibrate", "openrecipes.plan.layouts"}


def room_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def module_name(path: Path) -> str:
    rel = path.relative_to(SRC.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def imports_of(path: Path) -> list[tuple[int, str]]:
    """Every openrecipes module a file imports, with its line (relative imports resolved)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("openrecipes")]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.startswith("openrecipes"):
                found += [(node.lineno, target)]
                found += [(node.lineno, f"{target}.{a.name}") for a in node.names]
    return found


def violations() -> list[str]:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        here = room_of(module_name(path)) if path.parent != SRC else path.stem
        assert here in FLOORS, f"{path}: room {here!r} has no floor in tests/test_layering.py"
        for line, target in imports_of(path):
            there = room_of(target)
            if there not in FLOORS or there == here:
                continue
            where = f"{path.relative_to(SRC.parent)}:{line} imports {target}"
            if FLOORS[there] > FLOORS[here]:
                found.append(f"{where}: upward ({here} is floor {FLOORS[here]}, {there} is {FLOORS[there]})")
            if there in FORBIDDEN.get(here, set()):
                found.append(f"{where}: {here} must not import {there}")
            if here == "site" and target in PREDICTOR:
                found.append(f"{where}: the site must not run the predictor")
    return sorted(set(found))


def test_imports_run_only_downward_and_follow_the_named_rules():
    assert violations() == []


def predictor_paths_from_the_site() -> list[str]:
    """Every import chain, through any room, from a site module to a predictor module: the site reads exported plan
    tables, so it must not load the predictor even through a module it is allowed to import (imports inside
    functions count: a page built later would run them)."""
    graph = {module_name(path): {target for _, target in imports_of(path)} for path in SRC.rglob("*.py")}
    chains = {name: [name] for name in graph if room_of(name) == "site"}
    queue = list(chains)
    while queue:
        module = queue.pop()
        for target in sorted(graph[module]):
            for reached in (target, *_packages_of(target)):
                if reached in graph and reached not in chains:
                    chains[reached] = [*chains[module], reached]
                    queue.append(reached)
    return [" -> ".join(chains[name]) for name in sorted(PREDICTOR & set(chains))]


def _packages_of(module: str) -> list[str]:
    """Importing a.b.c runs a/__init__ and a/b/__init__ first."""
    parts = module.split(".")
    return [".".join(parts[:end]) for end in range(1, len(parts))]


def test_the_site_never_reaches_the_predictor():
    assert predictor_paths_from_the_site() == []


def test_the_checker_catches_a_predictor_reached_through_an_allowed_module(tmp_path, monkeypatch):
    fake = tmp_path / "openrecipes"
    for folder in ("site", "plan"):
        (fake / folder).mkdir(parents=True)
        (fake / folder / "__init__.py").write_text("")
    (fake / "site" / "pages.py").write_text("from openrecipes.plan.export_model import PredictedLayout\n")
    (fake / "plan" / "export_model.py").write_text("def rows():\n    from openrecipes.plan import predict\n")
    (fake / "plan" / "predict.py").write_text("")
    monkeypatch.setattr(__import__(__name__), "SRC", fake)
    assert predictor_paths_from_the_site() == [
        "openrecipes.site.pages -> openrecipes.plan.export_model -> openrecipes.plan.predict"]


def test_the_checker_catches_an_upward_import(tmp_path, monkeypatch):
    fake = tmp_path / "openrecipes"
    (fake / "catalog").mkdir(parents=True)
    (fake / "catalog" / "bad.py").write_text("from openrecipes.measure import result\n")
    monkeypatch.setattr(__import__(__name__), "SRC", fake)
    assert any("upward" in v for v in violations())


def test_engine_knowledge_may_not_import_a_runner_nor_the_catalog(tmp_path, monkeypatch):
    fake = tmp_path / "openrecipes"
    (fake / "engines" / "newengine").mkdir(parents=True)
    (fake / "engines" / "newengine" / "flags.py").write_text("from openrecipes.launch.newengine import render\n")
    (fake / "engines" / "newengine" / "logs.py").write_text("from openrecipes.catalog import model\n")
    (fake / "catalog").mkdir()
    (fake / "catalog" / "checks.py").write_text("from openrecipes.launch.newengine.render import render\n"
                                                "from openrecipes.engines.newengine.flags import FLAGS\n")
    monkeypatch.setattr(__import__(__name__), "SRC", fake)
    found = violations()
    assert any("newengine/flags.py" in v and "upward" in v for v in found)
    assert any("newengine/logs.py" in v and "upward" in v for v in found)
    from_catalog = [v for v in found if "catalog/checks.py" in v]
    assert from_catalog and all("newengine.render" in v and "upward" in v for v in from_catalog)  # flags is allowed


def engine_folders() -> set[str]:
    """The engines' own folders' names (engines/<name>/, each with its runner code under launch/<name>/ too)."""
    return {path.name for path in (SRC / "engines").iterdir() if path.is_dir() and (path / "__init__.py").exists()}


def engine_imports() -> list[str]:
    """Every import of an engine's own modules (openrecipes.engines.<name> or openrecipes.launch.<name>) from a
    module outside engines/<name>/ and launch/<name>/, the registry aside: the rooms reach an engine through the
    registry and its runner (engines/runner.py), so adding one is its folder and the registry's line."""
    found = {}
    for path in sorted(SRC.rglob("*.py")):
        here = module_name(path)
        for line, target in imports_of(path):
            parts = target.split(".")
            if len(parts) < 3 or parts[1] not in ("engines", "launch") or parts[2] not in engine_folders():
                continue
            home = {f"openrecipes.engines.{parts[2]}", f"openrecipes.launch.{parts[2]}"}
            if here == "openrecipes.engines.registry" or any(here == h or here.startswith(h + ".") for h in home):
                continue
            where = f"{path.relative_to(SRC.parent)}:{line}"
            found.setdefault(where, f"{where} imports {target}: only engines/{parts[2]}/, launch/{parts[2]}/ and "
                             "the registry import an engine's modules")
    return sorted(found.values())


def test_no_room_imports_an_engine_outside_its_folders():
    assert engine_imports() == []


def test_the_checker_catches_an_engine_imported_outside_its_folders(tmp_path, monkeypatch):
    fake = tmp_path / "openrecipes"
    for folder in ("engines/newengine", "launch/newengine", "launch", "tune"):
        (fake / folder).mkdir(parents=True, exist_ok=True)
        (fake / folder / "__init__.py").write_text("")
    (fake / "engines" / "registry.py").write_text("from openrecipes.engines.newengine.engine import ENGINE\n")
    (fake / "engines" / "newengine" / "engine.py").write_text("from openrecipes.engines.newengine import flags\n")
    (fake / "launch" / "newengine" / "train.py").write_text("from openrecipes.engines.newengine.flags import FLAGS\n")
    (fake / "launch" / "cli.py").write_text("from openrecipes.engines.runner import Launch\n"
                                           "from openrecipes.launch.newengine import train\n")
    (fake / "tune" / "arms.py").write_text("def arm():\n    from openrecipes.engines.newengine.flags import X\n")
    monkeypatch.setattr(__import__(__name__), "SRC", fake)
    assert [v.split(" imports ")[0] for v in engine_imports()] == ["openrecipes/launch/cli.py:2",
                                                                  "openrecipes/tune/arms.py:2"]


# Strings equal to an engine's name that name something else: the public record's source label of torchtitan's own
# published benchmarks (record-titan-* files).
NOT_THE_ENGINE = {("openrecipes/plan/record_heldout.py", "torchtitan")}


def engine_name_literals() -> list[str]:
    """Every string constant outside engines/ equal to a registered engine's name or a log format's name
    (docstrings aside; comments are not in the tree): where engines differ, a field or hook of the engine says how,
    and the names a user sees are the engine's data."""
    from openrecipes.engines.registry import ENGINES

    names = {engine.name for engine in ENGINES} | {form.name for engine in ENGINES for form in engine.log_formats}
    found = []
    for path in sorted(SRC.rglob("*.py")):
        if room_of(module_name(path)) == "engines":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                      if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                      and node.body and isinstance(node.body[0], ast.Expr)
                      and isinstance(node.body[0].value, ast.Constant)}
        where = path.relative_to(SRC.parent).as_posix()
        found += [f"{where}:{node.lineno}: {node.value!r}" for node in ast.walk(tree)
                  if isinstance(node, ast.Constant) and node.value in names and id(node) not in docstrings
                  and (where, node.value) not in NOT_THE_ENGINE]
    return found


def test_no_engine_is_named_outside_its_knowledge():
    assert engine_name_literals() == []


def test_the_checker_catches_an_engine_named_outside_engines(tmp_path, monkeypatch):
    fake = tmp_path / "openrecipes"
    for folder in ("plan", "engines"):
        (fake / folder).mkdir(parents=True)
    (fake / "plan" / "answer.py").write_text('"""The torchtitan engine first."""\n\n\n'
                                             'def default(engine):\n    """slime"""\n'
                                             '    return engine == "torchtitan"  # not "megatron"\n')
    (fake / "engines" / "registry.py").write_text('NAMES = ("torchtitan", "megatron", "slime")\n')
    monkeypatch.setattr(__import__(__name__), "SRC", fake)
    assert engine_name_literals() == ["openrecipes/plan/answer.py:6: 'torchtitan'"]


@pytest.mark.parametrize("module, room", [("openrecipes.tune.search", "tune"), ("openrecipes.plan.predict", "plan"),
                                          ("openrecipes.figures", "figures"),
                                          ("openrecipes.engines.torchtitan.flags", "engines"),
                                          ("openrecipes.engines.megatron.logs.read_slime", "engines"),
                                          ("openrecipes.engines.registry", "engines"),
                                          ("openrecipes.launch.torchtitan.train", "launch"),
                                          ("openrecipes.launch.cli", "launch")])
def test_rooms_are_named_by_their_top_package(module, room):
    assert room_of(module) == room


def room_cycles() -> list[list[str]]:
    """Every circle of rooms importing each other (an import inside a function counts), each from its first room."""
    graph: dict[str, set[str]] = {}
    for path in SRC.rglob("*.py"):
        here = room_of(module_name(path)) if path.parent != SRC else path.stem
        graph.setdefault(here, set()).update(room_of(target) for _, target in imports_of(path))
    cycles, done = [], set()

    def visit(room: str, trail: list[str]) -> None:
        if room in trail:
            cycles.append(trail[trail.index(room):])
            return
        if room in done:
            return
        for there in sorted(graph.get(room, set()) - {room}):
            visit(there, [*trail, room])
        done.add(room)

    for room in sorted(graph):
        visit(room, [])
    return cycles


def test_no_rooms_import_each_other_in_a_circle():
    assert room_cycles() == []


def test_the_circle_checker_finds_one(tmp_path, monkeypatch):
    fake = tmp_path / "openrecipes"
    for room, other in (("tune", "answer"), ("answer", "tune")):
        (fake / room).mkdir(parents=True)
        (fake / room / "__init__.py").write_text("")
        (fake / room / "step.py").write_text(f"def run():\n    from openrecipes.{other} import step\n")
    monkeypatch.setattr(__import__(__name__), "SRC", fake)
    assert room_cycles() == [["answer", "tune"]]
