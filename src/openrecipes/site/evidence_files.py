"""The evidence behind the site's figures, shipped with it as small text files so a reader can check a figure
without the repository: each re-derived recipe's raw logs and commands, the steps our log reader read from them (as
CSV), the logs of our runs the Plan pages set beside the planner, and every leaderboard as CSV.

Every file a contributor's run put in the catalog is shipped under its name with `.txt` added (train.log.txt,
command.sh.txt, train-steps.csv.txt): any static host serves that as plain text, which no browser runs or renders as
a page, whatever the file holds and whatever its own name was (`.html`, `.svg`, `.js`). It opens in the browser as
text, as `serve` sends it.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from openrecipes import figures
from openrecipes.catalog.entry_figures import published_of
from openrecipes.catalog.store import RecipeEntry
from openrecipes.errors import UserError

EVIDENCE_FOLDER = "evidence"  # in the site: the catalog's own paths beneath it
TEXT_SUFFIX = ".txt"  # the one suffix every static host serves as text/plain
COMMAND_FILE = "command.sh"  # the command a runs/ folder stores beside its log, shipped where present
STEP_COLUMNS = ("step", "loss", "step_time_s", "grad_norm", "memory_gib")


@dataclass(frozen=True)
class EvidenceFile:
    path: str  # site path
    label: str  # what a link to it says
    data: bytes


def evidence_path(catalog_path: str) -> str:
    """Where a file of the catalog (runs/.../train.log) lies in the site: its path with `.txt` added."""
    return f"{EVIDENCE_FOLDER}/{catalog_path}{TEXT_SUFFIX}"


def _csv(columns: tuple[str, ...], rows: Iterable[list]) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows(rows)
    return out.getvalue().encode("utf-8")


def log_files(root: Path, log: str, arm: str) -> list[EvidenceFile]:
    """One run's files: its raw log, the command stored beside it, and the steps read from the log."""
    from openrecipes.measure.formats import read_log

    path = (root / log).resolve()
    if not path.is_relative_to(root.resolve()):
        raise UserError(f"'{log}' lies outside the catalog {root}; name a file under runs/")
    folder = Path(log).parent.as_posix()
    files = [EvidenceFile(evidence_path(log), f"{arm}: {path.name}", path.read_bytes())]
    if (path.parent / COMMAND_FILE).is_file():
        files.append(EvidenceFile(evidence_path(f"{folder}/{COMMAND_FILE}"), f"{arm}: {COMMAND_FILE}",
                                  (path.parent / COMMAND_FILE).read_bytes()))
    # The steps the one log reader (openrecipes.measure) read from the log, one row each; a figure it did not find is
    # an empty cell.
    steps = (["" if value is None else value for value in (s.step, s.loss, s.step_time_s, s.grad_norm, s.memory_gib)]
             for s in read_log(path).steps)
    files.append(EvidenceFile(evidence_path(f"{folder}/{path.stem}-steps.csv"), f"{arm}: steps (CSV)",
                              _csv(STEP_COLUMNS, steps)))
    return files


def recipe_files(root: Path, entry: RecipeEntry) -> list[EvidenceFile]:
    """Every file behind a re-derived recipe's figures: both arms' logs, commands and steps, and each
    reproduction's log stored in the catalog."""
    recipe = entry.entry
    logs = [(arm, f"{folder}/train.log") for arm, folder in
            (("candidate", recipe.runs.candidate), ("reference", recipe.runs.reference))
            if folder] if recipe.runs else []
    logs += [(f"reproduction {r.date}", r.log) for r in recipe.reproductions if (root / r.log).is_file()]
    return [file for arm, log in logs for file in log_files(root, log, arm)]


def board_columns() -> tuple[str, ...]:
    """A board CSV's header: the entry, the figures figures.py exports (tokens_per_s_per_gpu, ...), then its date,
    author and page."""
    return ("rank", "recipe", "slug", "evidence", "gpu_type", "gpus", "layout",
            *(f.name for f in figures.shown_on("csv")), "measured", "author", "page")


def board_csv(rows: list[tuple[int, RecipeEntry, str, float | None, str]],
              token_budget: int = figures.DEFAULT_TOKEN_BUDGET) -> bytes:
    """A leaderboard as CSV, every rank: (rank, entry, evidence level, $ per 1M tokens at full precision, site path
    of its page); a time to train is for `token_budget` tokens."""
    def cell(figure: figures.FigureSpec, entry: RecipeEntry, usd: float | None) -> float | str:
        value = usd if figure.ranked_unrounded else published_of(figure, entry.entry, token_budget)
        if value is None:
            return ""
        return value if figure.stored else round(value, figure.decimals)  # a computed one at its decimals

    def cells(entry: RecipeEntry, usd: float | None) -> list[float | str]:
        return [cell(f, entry, usd) for f in figures.shown_on("csv")]

    return _csv(board_columns(), ([rank, entry.name, entry.slug, evidence, entry.entry.gpu.type, entry.entry.gpu.count,
                                   entry.entry.layout.label, *cells(entry, usd), entry.entry.result.measured,
                                   entry.entry.author.name, page] for rank, entry, evidence, usd, page in rows))
