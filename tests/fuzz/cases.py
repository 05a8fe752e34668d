"""The fuzz cases: every corpus file handed to every command that reads its kind, plus the inputs that cannot be
committed (FIFOs, devices, non-UTF-8 names, files over the size limits), made here under a scratch folder.
"""

from __future__ import annotations

import os
import shutil
import socket
from pathlib import Path

from make_corpus import CORPUS, HERE, REPO, SEED_RECIPE
from model_configs import cases as model_config_cases
from run import Case

GOOD_LOG = REPO / "tests/fixtures/logs/openrecipes-3-steps.jsonl"
GOOD_SCRIPT = REPO / "tests/fixtures/config/gpt-oss-20b-megatron-bridge-reference.sh"
_HELD: list[socket.socket] = []  # listening sockets kept open while the cases run


def held_port(family: socket.AddressFamily = socket.AF_INET) -> int:
    """A port this process listens on, so that `serve` on it ends in a one-line listen error instead of serving
    forever (whatever the catalog, and even as root, where low ports can be bound)."""
    held = socket.socket(family, socket.SOCK_STREAM)
    try:
        held.bind(("::1" if family == socket.AF_INET6 else "127.0.0.1", 0))
        held.listen()
    except OSError:  # no IPv6 here: serve --host ::1 fails to bind any port
        held.close()
        return 1
    _HELD.append(held)
    return held.getsockname()[1]


def _files(kind: str) -> list[Path]:
    return sorted(p for p in (CORPUS / kind).rglob("*") if p.is_file())


class _Scratch:
    """Numbered folders under one scratch root, one per case that needs its own files."""

    def __init__(self, root: Path) -> None:
        self.root, self.count = root, 0

    def folder(self) -> Path:
        self.count += 1
        path = self.root / f"c{self.count:04d}"
        path.mkdir(parents=True)
        return path

    def catalog(self, recipe: Path | None = None, card: Path | None = None, gpus: Path | None = None,
                instances: Path | None = None) -> Path:
        """A one-model catalog (the seed recipe, its card, the hardware tables) with one file replaced or added."""
        root = self.folder()
        recipes = root / "recipes/gpt-oss-20b/h200"
        recipes.mkdir(parents=True)
        shutil.copy(SEED_RECIPE, recipes / SEED_RECIPE.name)
        if recipe is not None:
            shutil.copy(recipe, recipes / "fuzz.yaml")
        (root / "models").mkdir()
        shutil.copy(card or REPO / "models/gpt-oss-20b.yaml", root / "models/gpt-oss-20b.yaml")
        (root / "hardware").mkdir()
        shutil.copy(gpus or REPO / "hardware/gpus.yaml", root / "hardware/gpus.yaml")
        shutil.copy(instances or REPO / "hardware/instances.yaml", root / "hardware/instances.yaml")
        return root


def _special_files(scratch: _Scratch) -> dict[str, Path]:
    """Inputs that are not committed: not regular files, undecodable names, over the size limits, links."""
    root = scratch.folder()
    made = {}
    fifo = root / "fifo.yaml"
    os.mkfifo(fifo)
    made["fifo"] = fifo
    made["directory"] = root
    made["device"] = Path("/dev/zero")
    made["missing"] = root / "missing.yaml"
    bad_name = Path(os.fsdecode(bytes(root) + b"/bad-\xff-name.yaml"))
    shutil.copy(SEED_RECIPE, bad_name)
    made["non-utf8-name"] = bad_name
    big = root / "big.yaml"
    big.write_text("notes: " + "x" * (2**20 + 100) + "\n", encoding="utf-8")
    made["over-1-mib"] = big
    word = root / "one-megabyte-word.yaml"
    text = SEED_RECIPE.read_text(encoding="utf-8")
    word.write_text(text.replace("\nrun: |\n", "\nrun: |\n  python3 x.py --a " + "a" * 1_000_000 + "\n", 1),
                    encoding="utf-8")
    made["one-megabyte-word"] = word
    long_line = root / "long-line.log"
    long_line.write_text("x" * (2 * 2**20) + "\n", encoding="utf-8")
    made["two-megabyte-line"] = long_line
    loop = root / "loop"
    loop.symlink_to(loop)
    made["symlink-loop"] = loop
    dangling = root / "dangling.yaml"
    dangling.symlink_to(root / "nowhere")
    made["dangling-link"] = dangling
    return made


def catalog_cases(scratch: _Scratch) -> list[Case]:
    cases = []
    recipes = _files("recipes")
    mini = scratch.catalog()
    for path in recipes:
        cases.append(Case(f"validate/{path.name}", "validate", ["validate", str(path), "--catalog", str(mini)],
                          str(mini)))
    for i, path in enumerate(recipes):
        commands = {0: ("list", []), 3: ("show", ["fuzz"]), 5: ("run --dry-run", None)}
        command = commands.get(i % 8)
        if command is None:
            continue
        name, args = command
        root = scratch.catalog(recipe=path)
        if name == "run --dry-run":
            argv = ["run", "--dry-run", str(root / "recipes/gpt-oss-20b/h200/fuzz.yaml")]
        else:
            argv = [name.split()[0], *args, "--catalog", str(root)]
        cases.append(Case(f"{name}/{path.name}", name, argv, str(root)))
    for path in recipes[::24]:
        root = scratch.catalog(recipe=path)
        cases.append(Case(f"site build/{path.name}", "site build", ["site", "build", "--out", str(root / "site"),
                                                                    "--catalog", str(root)], str(root)))
    port = str(held_port())
    for path in recipes[7::40]:
        root = scratch.catalog(recipe=path)
        cases.append(Case(f"serve/{path.name}", "serve", ["serve", "--catalog", str(root), "--port", port], str(root)))
    for path in _files("cards"):
        root = scratch.catalog(card=path)
        for name, argv in (("validate", ["validate", "--catalog", str(root)]),
                           ("list", ["list", "--catalog", str(root)]),
                           ("run --dry-run", ["run", "--dry-run", str(root / "recipes/gpt-oss-20b/h200" /
                                                                     SEED_RECIPE.name)])):
            cases.append(Case(f"{name}/card-{path.name}", name, argv, str(root)))
    for path in _files("hardware"):
        kind = "gpus" if path.name.startswith("gpus") else "instances"
        root = scratch.catalog(**{kind: path})
        for name, argv in (("validate", ["validate", "--catalog", str(root)]), ("show", ["show", SEED_RECIPE.stem,
                                                                                         "--catalog", str(root)])):
            cases.append(Case(f"{name}/hardware-{path.name}", name, argv, str(root)))
    return cases


def measure_cases(scratch: _Scratch, special: dict[str, Path]) -> list[Case]:
    cases = []
    for path in _files("logs"):
        cases.append(Case(f"measure/{path.name}", "measure", ["measure", str(path), "--window", "1", "3"], str(HERE)))
        cases.append(Case(f"measure --json/{path.name}", "measure", ["measure", str(path), "--window", "0", "5",
                                                                     "--json"], str(HERE)))
    root = scratch.catalog()
    for path in _files("recipes")[1::12]:
        recipe = scratch.folder() / "recipes/gpt-oss-20b/h200/r.yaml"
        recipe.parent.mkdir(parents=True)
        shutil.copy(path, recipe)
        cases.append(Case(f"measure --recipe/{path.name}", "measure",
                          ["measure", str(GOOD_LOG), "--recipe", str(recipe), "--window", "0", "2"], str(root)))
    for name, path in special.items():
        cases.append(Case(f"measure/{name}", "measure", ["measure", str(path), "--window", "0", "1"], str(HERE)))
    for i, window in enumerate([["-1", "2"], ["2", "1"], ["0", "99999999999999999999"], ["x", "1"], ["0"], []]):
        cases.append(Case(f"measure/window-{i}", "measure", ["measure", str(GOOD_LOG), "--window", *window],
                          str(HERE)))
    return cases


def convergence_cases(special: dict[str, Path]) -> list[Case]:
    cases = []
    good_curve = CORPUS / "curves/001-good.csv"
    for path in _files("logs") + _files("curves"):
        cases.append(Case(f"check convergence/candidate-{path.name}", "check convergence",
                          ["check", "convergence", "--candidate", str(path), "--reference", str(good_curve)],
                          str(HERE)))
    for path in _files("curves"):
        cases.append(Case(f"check convergence/reference-{path.name}", "check convergence",
                          ["check", "convergence", "--candidate", str(good_curve), "--reference", str(path), "--json"],
                          str(HERE)))
    # Curves that overflow or are not numbers: NaN must never pass, whatever produced it (exit 1 or 2, never 0).
    curves = {p.name.split("-", 1)[1]: p for p in _files("curves")}
    for a, b in [("huge-up.csv", "huge-down.csv"), ("huge-down.csv", "huge-up.csv"),
                 ("huge-alternating.csv", "huge-up.csv"), ("tiny.csv", "huge-down.csv"), ("loss-0.csv", "good.csv"),
                 ("good.csv", "loss-0.csv"), ("loss-1.csv", "good.csv"), ("loss-12.csv", "good.csv"),
                 ("nearly-constant.csv", "good.csv"), ("constant.csv", "constant.csv")]:
        for flags in ([], ["--json"], ["--placement-only"]):
            cases.append(Case(f"check convergence/never-passes-{a}-{b}{''.join(flags)}", "check convergence",
                              ["check", "convergence", "--candidate", str(curves[a]), "--reference", str(curves[b]),
                               *flags], str(HERE), expect=(1, 2)))
    for name, path in special.items():
        cases.append(Case(f"check convergence/{name}", "check convergence",
                          ["check", "convergence", "--candidate", str(path), "--reference", str(good_curve)],
                          str(HERE)))
    return cases


def config_cases(special: dict[str, Path]) -> list[Case]:
    cases = []
    for path in _files("scripts"):
        expect = (2,) if "different" in path.name or "inline" in path.name else (0, 1, 2)
        for role, other in (("candidate", "reference"), ("reference", "candidate")):
            cases.append(Case(f"check config/{role}-{path.name}", "check config",
                              ["check", "config", f"--{role}", str(path), f"--{other}", str(GOOD_SCRIPT)], str(HERE),
                              expect=expect))
    for path in _files("rules"):
        cases.append(Case(f"check config/rules-{path.name}", "check config",
                          ["check", "config", "--candidate", str(GOOD_SCRIPT), "--reference", str(GOOD_SCRIPT),
                           "--rules", str(path)], str(HERE)))
    for path in _files("recipes")[2::16]:
        cases.append(Case(f"check config/recipe-{path.name}", "check config",
                          ["check", "config", "--candidate", str(path), "--reference", str(SEED_RECIPE)], str(HERE)))
    for name, path in special.items():
        cases.append(Case(f"check config/{name}", "check config",
                          ["check", "config", "--candidate", str(path), "--reference", str(GOOD_SCRIPT)], str(HERE)))
        cases.append(Case(f"check config/rules-{name}", "check config",
                          ["check", "config", "--candidate", str(GOOD_SCRIPT), "--reference", str(GOOD_SCRIPT),
                           "--rules", str(path)], str(HERE)))
    return cases


def catalog_special_cases(scratch: _Scratch, special: dict[str, Path]) -> list[Case]:
    cases = []
    mini = scratch.catalog()
    for name, path in special.items():
        cases.append(Case(f"validate/{name}", "validate", ["validate", str(path), "--catalog", str(mini)], str(mini)))
        cases.append(Case(f"run --dry-run/{name}", "run --dry-run", ["run", "--dry-run", str(path)], str(mini)))
        cases.append(Case(f"validate --catalog/{name}", "validate", ["validate", "--catalog", str(path)], str(mini)))
        cases.append(Case(f"site build --out/{name}", "site build",
                          ["site", "build", "--out", str(path), "--catalog", str(mini)], str(mini)))
    root = scratch.catalog()
    bad = Path(os.fsdecode(bytes(root / "recipes/gpt-oss-20b/h200") + b"/bad-\xff.yaml"))
    shutil.copy(SEED_RECIPE, bad)
    for command in (["validate"], ["list"], ["site", "build", "--out", str(root / "site")]):
        cases.append(Case(f"{' '.join(command[:2])}/non-utf8-recipe-name", " ".join(command[:2]),
                          [*command, "--catalog", str(root)], str(root)))
    return cases


def plan_cases(scratch: _Scratch) -> list[Case]:
    cases, mini = [], scratch.catalog()
    variants = [
        ["nope", "--gpu", "H200", "--gpus", "8"], ["../../etc/passwd", "--gpu", "H200", "--gpus", "8"],
        ["", "--gpu", "H200", "--gpus", "8"], ["x" * 10000, "--gpu", "H200", "--gpus", "8"],
        ["gpt-oss-20b", "--gpu", "", "--gpus", "8"], ["gpt-oss-20b", "--gpu", "h200", "--gpus", "8"],
        ["gpt-oss-20b", "--gpu", "H200", "--gpus", "0"], ["gpt-oss-20b", "--gpu", "H200", "--gpus", "-8"],
        ["gpt-oss-20b", "--gpu", "H200", "--gpus", "7"], ["gpt-oss-20b", "--gpu", "H200", "--gpus", "16385"],
        ["gpt-oss-20b", "--gpu", "H200", "--gpus", "9" * 400], ["gpt-oss-20b", "--gpu", "H200", "--gpus", "8.5"],
        ["gpt-oss-20b", "--gpu", "H200", "--gpus", "nan"], ["gpt-oss-20b", "--gpu", "H200", "--gpus", "1e3"],
        ["gpt-oss-20b", "--gpu", "H200", "--gpus", "8", "--row-tokens", "0"],
        ["gpt-oss-20b", "--gpu", "H200", "--gpus", "8", "--row-tokens", "-1"],
        ["gpt-oss-20b", "--gpu", "H200", "--gpus", "8", "--row-tokens", str(2**40)],
        ["gpt-oss-20b", "--gpu", "H200", "--gpus", "8", "--global-batch", "0"],
        ["gpt-oss-20b", "--gpu", "H200", "--gpus", "8", "--global-batch", "3"],
        ["gpt-oss-20b", "--gpu", "H200", "--gpus", "8", "--global-batch", str(2**40)],
        ["gpt-oss-20b", "--gpu", "H200", "--gpus", "8", "--top", "-1"],
        ["gpt-oss-20b", "--gpu", "H200", "--gpus", "8", "--engine", "jax"],
        ["gpt-oss-20b", "--gpu", "H200", "--gpus", "8", "--engine", ""],
        ["gpt-oss-20b", "--gpu", "H200"], ["gpt-oss-20b"], [], ["--gpus", "8"],
        ["qwen3-8b", "--gpu", "H200", "--gpus", "8", "--row-tokens", "1", "--json"],
        ["qwen3-8b", "--gpu", "H200", "--gpus", "8", "--global-batch", "1", "--engine", "torchtitan", "--json"],
    ]
    for i, args in enumerate(variants):
        cases.append(Case(f"plan/{i}", "plan", ["plan", *args], str(HERE)))
    for i, args in enumerate([["qwen3-8b", "--gpu", "H200", "--gpus", "8", "--budget-minutes", "0", "--dry-run"],
                              ["qwen3-8b", "--gpu", "H200", "--gpus", "8", "--budget-minutes", "-5", "--dry-run"],
                              ["qwen3-8b", "--gpu", "H200", "--gpus", "8", "--budget-minutes", "nan", "--dry-run"],
                              ["qwen3-8b", "--gpu", "H200", "--gpus", "8", "--budget-minutes", "inf", "--dry-run"],
                              ["qwen3-8b", "--gpu", "H200", "--gpus", "0", "--budget-minutes", "5", "--dry-run"]]):
        cases.append(Case(f"tune/{i}", "tune", ["tune", *args], str(HERE)))
    port, port6 = str(held_port()), str(held_port(socket.AF_INET6))
    for i, args in enumerate([["--port", "-1"], ["--port", "65536"], ["--port", "x"], ["--host", "not a host"],
                              ["--host", "::1", "--port", port6], ["--host", "999.1.1.1"], ["--port", port],
                              ["--host", "", "--port", port], ["--host", "127.0.0.1\n", "--port", port]]):
        cases.append(Case(f"serve/options-{i}", "serve", ["serve", "--catalog", str(mini), *args], str(mini)))
    return cases


def rows_cases(scratch: _Scratch, tokenizer: Path, special: dict[str, Path]) -> list[Case]:
    good = CORPUS / "conversations/good.jsonl"

    def build(name: str, *, conversations: Path = good, tokenizer_dir: Path = tokenizer, extra=()):
        out = scratch.folder() / "rows"
        return Case(f"rows build/{name}", "rows build",
                    ["rows", "build", "--conversations", str(conversations), "--tokenizer", str(tokenizer_dir),
                     "--chat-format", "qwen3", "--rows", "2", "--row-tokens", "64", "--seed", "1", "--out", str(out),
                     "--workers", "0", *extra], str(HERE))

    cases = [build(path.name, conversations=path) for path in _files("conversations")]
    for folder in sorted(p for p in (CORPUS / "tokenizers").iterdir() if p.is_dir()):
        broken = scratch.folder() / "tokenizer"
        shutil.copytree(tokenizer, broken)
        for file in folder.iterdir():
            shutil.copy(file, broken / file.name)
        cases.append(build(f"tokenizer-{folder.name}", tokenizer_dir=broken))
    for name, path in special.items():
        cases.append(build(f"conversations-{name}", conversations=path))
        cases.append(build(f"tokenizer-{name}", tokenizer_dir=path))
    for i, extra in enumerate([["--rows", "0"], ["--rows", "-1"], ["--row-tokens", "0"], ["--row-tokens", "-5"],
                               ["--seed", "-1"], ["--workers", "-1"], ["--chat-format", "nope"],
                               ["--rows", "9" * 30], ["--row-tokens", str(2**40)]]):
        cases.append(build(f"option-{i}", extra=extra))
    for i, extra in enumerate([["--rows", "0"], ["--rows", "-1"], ["--row-tokens", "0"], ["--seed", "-1"],
                               ["--chat-format", "chatml"], ["--workers", "-3"], ["--rows", "1000000000"]]):
        out = scratch.folder() / "demo"
        cases.append(Case(f"rows demo/option-{i}", "rows demo", ["rows", "demo", "--out", str(out), "--workers", "0",
                                                                  "--row-tokens", "64", *extra], str(HERE)))
    cases.append(Case("rows demo/out-is-a-file", "rows demo", ["rows", "demo", "--out", str(GOOD_LOG)], str(HERE)))
    for i, args in enumerate([["nope", "--out", str(scratch.folder())], ["", "--out", str(scratch.folder())],
                              ["qwen3", "--out", str(GOOD_LOG)], ["qwen3", "--out", str(special["symlink-loop"])],
                              ["qwen3", "--out", "/proc/version/x"], ["../qwen3", "--out", str(scratch.folder())]]):
        cases.append(Case(f"tokenizer export/{i}", "tokenizer export", ["tokenizer", "export", *args], str(HERE)))
    return cases


def all_cases(scratch_root: Path, tokenizer: Path | None = None) -> list[Case]:
    """Every case; `tokenizer` is a good tokenizer folder for the rows cases (none: no rows build cases)."""
    scratch = _Scratch(scratch_root)
    special = _special_files(scratch)
    cases = (catalog_cases(scratch) + catalog_special_cases(scratch, special) + measure_cases(scratch, special)
             + convergence_cases(special) + config_cases(special) + plan_cases(scratch)
             + model_config_cases(_files("model_configs"), special, scratch.folder, HERE))
    if tokenizer is not None:
        cases += rows_cases(scratch, tokenizer, special)
    from evidence_cases import evidence_cases  # noqa: PLC0415 (the same)
    from hostile_cases import hostile_cases  # noqa: PLC0415 (it imports this module's helpers)
    from impossible_cases import impossible_cases  # noqa: PLC0415 (the same)
    from names_bounds_cases import names_bounds_cases  # noqa: PLC0415 (the same)
    from refresh_launch_cases import refresh_launch_cases  # noqa: PLC0415 (the same)

    cases += evidence_cases(scratch)
    return (cases + hostile_cases(scratch, tokenizer) + impossible_cases(scratch) + refresh_launch_cases(scratch)
            + names_bounds_cases(scratch))
