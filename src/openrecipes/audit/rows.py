"""`openrecipes audit --rebuild-rows`: a recipe whose rows come from the bundled demo corpus has them rebuilt by
the very command it records (`workload.dataset.build.builder`), into a temporary folder, and the digests of the
rebuilt rows compared with the ones it pins. One build per distinct command, however many recipes share it."""

from __future__ import annotations

import shlex
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from openrecipes.catalog.model import Recipe
from openrecipes.rows.manifest import RowsManifest
from openrecipes.verdict import Finding

DEMO_BUILDER = ("openrecipes", "rows", "demo")  # the only builder whose input ships with the package


@dataclass(frozen=True)
class RebuiltRows:
    rows_sha256: str | None
    parquet_sha256: str | None
    error: str | None = None


def demo_arguments(builder: str) -> list[str] | None:
    """The recorded demo command's arguments without its --out, or None for any other builder."""
    try:
        argv = shlex.split(builder)
    except ValueError:
        return None
    if tuple(argv[:3]) != DEMO_BUILDER:
        return None
    arguments, skip = [], False
    for word in argv[3:]:
        if skip:
            skip = False
        elif word == "--out":
            skip = True
        elif not word.startswith("--out="):
            arguments.append(word)
    return arguments


def rebuild(arguments: list[str]) -> RebuiltRows:
    with tempfile.TemporaryDirectory(prefix="openrecipes-audit-rows-") as folder:
        done = subprocess.run([sys.executable, "-m", "openrecipes", "rows", "demo", "--out", folder, *arguments],
                              capture_output=True, text=True)
        if done.returncode != 0:
            last = (done.stderr.strip() or done.stdout.strip() or "no output").splitlines()[-1]
            return RebuiltRows(None, None, f"the rebuild failed ({last})")
        manifest = RowsManifest.read(Path(folder) / "manifest.json")
        return RebuiltRows(manifest.rows_sha256, manifest.parquet_sha256)


class RowsRebuilder:
    """Rebuilds each distinct demo command once per audit."""

    def __init__(self) -> None:
        self.built: dict[tuple[str, ...], RebuiltRows] = {}

    def findings(self, recipe: Recipe) -> Iterator[Finding]:
        dataset = recipe.workload.dataset
        arguments = demo_arguments(dataset.build.builder)
        if arguments is None or dataset.rows_sha256 is None:  # a planned recipe's rows have no digest to compare
            return  # rows from a dataset we do not ship: not rebuildable here
        key = tuple(arguments)
        if key not in self.built:
            self.built[key] = rebuild(arguments)
        rebuilt = self.built[key]
        if rebuilt.error:
            yield Finding("workload.dataset.build.builder", dataset.build.builder, None, rebuilt.error)
            return
        source = f"`{' '.join(DEMO_BUILDER)} {' '.join(arguments)}` rebuilt here"
        for field, published, derived in (
                ("workload.dataset.rows_sha256", dataset.rows_sha256, rebuilt.rows_sha256),
                ("workload.dataset.build.parquet_sha256", dataset.build.parquet_sha256, rebuilt.parquet_sha256)):
            if published != derived:
                yield Finding(field, published, derived, f"is {published} but {source} gives {derived}; the rows "
                              "the recipe names are not the rows its builder makes")
