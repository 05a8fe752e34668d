"""Where a recipe's run writes: runs/<name>/, its name the recipe file's name without .yaml.

The name becomes a folder, a Slurm job name and part of every output path (the batch's slurm-N.out, each node's
log, launch.sbatch), so it must be one plain word that stays inside runs/: `...yaml` (name `..`) would put them in
the catalog root, a name with a newline or a leading dash would reach sbatch as something else. A recipe file whose
name is not a plain slug is refused before anything is written.
"""

from __future__ import annotations

import re
import stat
from pathlib import Path

from openrecipes.atomic import lstat_mode
from openrecipes.errors import UserError
from openrecipes.textfile import shown

RUNS = Path("runs")
MAX_NAME = 100
# Letters, digits, `.`, `_` and `-`, starting with a letter or a digit; `..` nowhere.
SLUG = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def run_name(recipe_path: Path) -> str:
    """The recipe file's name without .yaml, when it is a plain slug; else a UserError naming the file."""
    name = Path(recipe_path).stem
    if not SLUG.fullmatch(name) or ".." in name or len(name) > MAX_NAME:
        raise UserError(f"{shown(recipe_path)}: the recipe's file name '{shown(name)}' is not a plain name (letters, "
                        f"digits, . _ -, starting with a letter or digit, no '..', at most {MAX_NAME} characters); "
                        "its run folder, job name and logs take that name: rename the file")
    return name


def run_folder(recipe_path: Path) -> Path:
    """runs/<name>/ for the recipe (relative to the working directory), refused when runs/<name> is a link or
    anything but a folder: nothing of the run may land outside it."""
    folder = RUNS / run_name(recipe_path)
    for path in (RUNS, folder):
        if (mode := lstat_mode(path)) is None:
            break
        if not stat.S_ISDIR(mode):
            raise UserError(f"{path}: not a folder (a link, a file or a device); the run writes only inside "
                            f"{folder}/: remove or rename {path}")
    return folder
