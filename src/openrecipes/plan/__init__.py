
# The planner's version, sealed into every plans/*.json with the data the plan was computed from (tune/fingerprint.py).
# Bump it when a change to the code changes what a plan contains (a formula, a rounding, a field, a table's rows):
# every plan is then stale until `openrecipes refresh` writes it again. A refactor, a comment or a speed-up leaves it;
# `refresh --check` recomputes a sample of the plans and compares their contents, so a forgotten bump still fails CI.
# 3: compute by operator, communication on the topology, Megatron-FSDP; 4: ranges hold publishers' offsets
PLANNER_VERSION = 4
