"""Where the bundled catalog lives: the repository this package was installed from."""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePosixPath

_REPO_ROOT = Path(__file__).resolve().parents[3]


def bundled_root() -> Path:
    return _REPO_ROOT


# What `openrecipes refresh` generates besides plans/ (the held-out tables and their inputs' seals): data, kept
# outside the package's code, beside the catalog it was computed from
DERIVED = _REPO_ROOT / "derived"


def default_catalog_root() -> Path:
    """The working directory when it holds a catalog (a clone or a fork), else the bundled one."""
    cwd = Path.cwd()
    return cwd if (cwd / "recipes").is_dir() else _REPO_ROOT


def catalog_root(recipe_path: Path) -> Path | None:
    """The catalog folder holding a recipe laid out as recipes/<model>/<gpu>/NAME.yaml, else None; runs: folders
    and a fork's own models/ and hardware/ are read relative to it."""
    resolved = Path(recipe_path).resolve()
    return resolved.parents[3] if resolved.parent.parent.parent.name == "recipes" else None


def relative_path(path: Path, root: Path) -> str:
    """`path` as written in a recipe or record: relative to the catalog root when inside it, else as given."""
    try:
        return str(Path(path).resolve().relative_to(Path(root).resolve()))
    except ValueError:
        return str(path)


RUN_LOG = "train.log"  # the raw log every runs: folder holds
RUN_COMMAND = "command.sh"  # the run's exact command, beside its log (`tune` and `record` write it)


def evidence_problem(root: Path | None, text: str, *, folder: bool) -> str | None:
    """Why an evidence path a recipe cites cannot be used, or None. Evidence is relative, lies under the catalog's
    runs/ after every link is followed, and is a regular file: a runs: folder (`folder=True`) holding train.log,
    or a reproduction's log. Without a catalog `root` only the spelling is checked."""
    where = PurePosixPath(text)
    if where.is_absolute() or text.startswith("~"):
        return f"'{text}' is an absolute path; give it relative to the catalog root, under runs/"
    if ".." in where.parts or not where.parts or where.parts[0] != "runs":
        return f"'{text}' is not a path under runs/; evidence is committed under the catalog's runs/ folder"
    if root is None:
        return None
    file = root / text / RUN_LOG if folder else root / text
    try:
        resolved = file.resolve()
        runs = (root / "runs").resolve()
        mode = os.stat(resolved).st_mode
    except FileNotFoundError:
        return f"'{text}' holds no {RUN_LOG} under the catalog ({root}); commit the raw log there or fix the path" \
            if folder else f"'{text}': no such file under the catalog ({root}); commit the log there or fix the path"
    except (OSError, RuntimeError) as error:  # a link loop on the way
        return f"'{text}' cannot be followed ({error}); remove the looping link"
    if not resolved.is_relative_to(runs):
        return f"'{text}' leads outside the catalog's runs/ (to {resolved}) through a link; commit the file itself"
    if not stat.S_ISREG(mode):
        return f"'{text}' is not a regular file; evidence is a committed log file"
    return None
