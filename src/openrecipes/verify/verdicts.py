"""The convergence and configuration verdicts as typed objects, for the rooms above that act on them (audit,
record, reproduce, tune). `check convergence --json` and `check config --json` print the full dicts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from openrecipes.catalog.command import ParsedRun
from openrecipes.verify.config import Rules, compare_runs
from openrecipes.verify.convergence import LossCurve, check_convergence


@dataclass(frozen=True)
class ConvergenceVerdict:
    passed: bool
    correlation: float | None  # None when it cannot be computed (too few points, a constant curve)
    final_loss_difference: float | None
    pointwise_failures: int | None
    steps: int  # steps both arms logged
    reasons: tuple[str, ...]  # why it failed, one sentence each

    @property
    def result(self) -> Literal["pass", "fail"]:
        return "pass" if self.passed else "fail"


@dataclass(frozen=True)
class ConfigVerdict:
    result: str  # pass, needs component test, precision change, or fail
    changed: tuple[str, ...]  # every argument or environment variable that differs
    reasons: tuple[str, ...]


def convergence_verdict(candidate: LossCurve, reference: LossCurve) -> ConvergenceVerdict:
    verdict = check_convergence(candidate, reference)
    return ConvergenceVerdict(verdict["passed"], verdict["correlation"], verdict["final_loss_difference"],
                              verdict["pointwise_failures"], verdict["steps"], tuple(verdict["reasons"]))


def config_verdict(reference: ParsedRun, candidate: ParsedRun, rules: Rules) -> ConfigVerdict:
    verdict = compare_runs(reference, candidate, rules)
    return ConfigVerdict(verdict["result"], tuple(change["argument"] for change in verdict["changes"]),
                         tuple(verdict["reasons"]))
