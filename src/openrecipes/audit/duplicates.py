"""One configuration, one entry: two recipes on one leaderboard whose run commands differ only in run length or
logging are the same configuration measured twice. The later measurement is a reproduction of the first
(`openrecipes reproduce --write`), not a second row.

Each recipe's configuration is reduced to a signature (its board, launcher, exports and every flag but run
length and logging), so a catalog of any size is grouped in one pass; `check config` then names what differs.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from openrecipes.catalog.command import CommandError, ParsedRun, read_run
from openrecipes.catalog.leaderboard import workload_of
from openrecipes.catalog.model import Recipe
from openrecipes.verdict import Finding
from openrecipes.verify.config import Rules
from openrecipes.verify.verdicts import config_verdict

# Arguments that change how long a run is, not what it trains: steps in the run (torchtitan, Megatron, slime).
RUN_LENGTH_ARGUMENTS = frozenset({"--training.steps", "--train-iters", "--num-rollout"})
# Arguments that change only what the run prints or where (torchtitan's metrics section, torchrun's output flags,
# Megatron's logging), never the arithmetic.
LOGGING_ARGUMENTS = frozenset({"--local-ranks-filter", "--role", "--tee", "--log-interval", "--log-throughput",
                               "--tensorboard-dir", "--wandb-project", "--wandb-exp-name"})
LOGGING_PREFIXES = ("--metrics.",)


def length_or_logging(argument: str) -> bool:
    return argument in RUN_LENGTH_ARGUMENTS or argument in LOGGING_ARGUMENTS or argument.startswith(LOGGING_PREFIXES)


@dataclass(frozen=True)
class Entry:
    path: Path
    recipe: Recipe


def signature(recipe: Recipe, parsed: ParsedRun) -> tuple:
    """What makes a configuration on its board: everything but run length and logging."""
    flags = tuple(sorted((flag, tuple(values)) for flag, values in parsed.flags.items()
                         if not length_or_logging(flag)))
    return (recipe.model, recipe.gpu.type, workload_of(recipe), tuple(parsed.launcher), flags,
            tuple(sorted(parsed.exports.items())))


def _parse(run: str) -> ParsedRun | None:
    parsed = read_run(run)  # read once per process: a catalog often repeats one command with another layout
    return None if isinstance(parsed, CommandError) else parsed  # the validator reports a command it cannot read


class DuplicateIndex:
    """The catalog's recipes grouped by configuration."""

    def __init__(self, entries: list[Entry], rules: Rules) -> None:
        self.rules = rules
        self.groups: dict[tuple, list[tuple[Entry, ParsedRun]]] = {}
        self.members: dict[tuple, set[Path]] = {}  # each group's paths, so a recipe finds its others in one step
        for entry in entries:
            parsed = _parse(entry.recipe.run)
            if parsed is not None:
                key = signature(entry.recipe, parsed)
                self.groups.setdefault(key, []).append((entry, parsed))
                self.members.setdefault(key, set()).add(entry.path)

    def findings(self, entry: Entry, root: Path) -> Iterator[Finding]:
        """One finding naming the recipe's other entries of the same configuration, if any."""
        parsed = _parse(entry.recipe.run)
        if parsed is None:
            return
        key = signature(entry.recipe, parsed)
        group = self.groups.get(key, [])
        count = len(group) - (entry.path in self.members.get(key, ()))
        if not count:
            return
        others = [(other, other_parsed) for other, other_parsed in group[:4] if other.path != entry.path][:3]
        names = [str(other.path.relative_to(root) if other.path.is_relative_to(root) else other.path)
                 for other, _ in others]
        shown = ", ".join(names) + (f" and {count - 3} more" if count > 3 else "")
        changed = config_verdict(parsed, others[0][1], self.rules).changed
        differs = f"differ only in {', '.join(changed)}" if changed else "are the same"
        yield Finding("run", None, shown, f"this recipe and {shown} are one configuration (their run commands "
                      f"{differs}); keep one entry and record the later measurement as its reproduction with "
                      "`openrecipes reproduce RECIPE LOG --write`")
