"""Where the bundled catalog lives: the repository this package was installed from."""

from __future__ import annotations

from pathlib import Path

_REPO_ROOT = Path(__file__).resolve().parents[3]


def bundled_root() -> Path:
    return _REPO_ROOT


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
