"""`openrecipes tune`: measure the planner's best torchtitan layouts with short runs and write the winner as a recipe.

1. Candidates: the planner's fitting torchtitan layouts (with torch.compile and reshard-after-forward variants),
   kept while their optimistic prediction can beat the best one's pessimistic prediction, capped by the budget.
2. Each is measured with a short run through the engines' execution path (torchrun) and openrecipes.measure.
3. A candidate is dropped once its optimistic throughput cannot reach the leader's pessimistic measured one; a run
   that ends in "CUDA out of memory" marks its layout unfit and records the planner's memory miss.
4. After each measurement the (model, GPU) efficiency is refitted over every point so far and the rest re-ranked.
5. The winner becomes a recipe (status measured) whose reference arm is the base recipe's stock configuration, run
   for the same steps; `check config` and `check convergence` go into its `correctness`.
6. Nothing is started past the budget; `--dry-run` prints the plan and the exact commands and runs nothing.
"""

from __future__ import annotations

from openrecipes.tune.report import dry_run_text, summary_text
from openrecipes.tune.search import Setup, setup, tune
from openrecipes.tune.winner import write_winner

__all__ = ["Setup", "dry_run_text", "setup", "summary_text", "tune", "write_winner"]
