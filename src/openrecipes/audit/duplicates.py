"""One configuration, one entry: two recipes on one leaderboard whose run commands differ only in run length or
logging are the same configuration measured twice. The later measurement is a reproduction of the first
(`openrecipes reproduce --write`), not a second row."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from openrecipes.audit.evidence import Finding
from openrecipes.catalog.command import CommandError, parse_run
from openrecipes.catalog.leaderboard import workload_of
from openrecipes.catalog.model import Recipe
from openrecipes.verify.config import Rules
from openrecipes.verify.verdicts import config_verdict

# Arguments that change how long a run is, not what it trains: steps in the run (torchtitan, Megatron, slime).
RUN_LENGTH_ARGUMENTS = frozenset({"--training.steps", "--train-iters", "--num-rollout"})
# Arguments that change only what the run prints or where (torchtitan's metrics section, torchrun's output flags,
# Megatron's logging), never the arithmetic.
LOGGING_ARGUMENTS = frozenset({"--local-ranks-filter", "--role", "--tee", "--log-interval", "--log-throughput",
                               "--tensorboard-dir", "--wandb-project", "--wandb-exp-name"})
LOGGING_PREFIXES = ("--metrics.",)


def _length_or_logging(argument: str) -> bool:
    return argument in RUN_LENGTH_ARGUMENTS or argument in LOGGING_ARGUMENTS or argument.startswith(LOGGING_PREFIXES)


@dataclass(frozen=True)
class Entry:
    path: Path
    recipe: Recipe


def _board(recipe: Recipe) -> tuple:
    return recipe.model, recipe.gpu.type, workload_of(recipe)


def same_configuration(a: Recipe, b: Recipe, rules: Rules) -> list[str] | None:
    """The arguments two recipes on one board differ in when those are only run length or logging, else None."""
    if _board(a) != _board(b):
        return None
    try:
        verdict = config_verdict(parse_run(a.run), parse_run(b.run), rules)
    except CommandError:
        return None  # the validator reports a run command it cannot read
    changed = list(verdict.changed)
    return changed if all(_length_or_logging(argument) for argument in changed) else None


def duplicate_findings(entry: Entry, others: list[Entry], rules: Rules, root: Path) -> Iterator[Finding]:
    for other in others:
        if other.path == entry.path:
            continue
        changed = same_configuration(entry.recipe, other.recipe, rules)
        if changed is None:
            continue
        name = other.path.relative_to(root) if other.path.is_relative_to(root) else other.path
        differs = f"differ only in {', '.join(changed)}" if changed else "are the same"
        yield Finding("run", None, str(name), f"this recipe and {name} are one configuration (their run commands "
                      f"{differs}); keep one entry and record the later measurement as its reproduction with "
                      "`openrecipes reproduce RECIPE LOG --write`")
