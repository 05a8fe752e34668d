"""The one answer to "model M on N x GPU G (in precision P), for a budget of T tokens": our measured recipes at that
point, then published entries there (with their source's caveats), then the planner's best layout on every engine
that runs the model; each line with its evidence level, speed, range, wall time and cost for the budget, and how to
get a runnable recipe; or why nothing is offered. `openrecipes answer` prints it; the home page's question form
renders the same answers, precomputed (derived/answers/<model>.json holds the planner's part)."""
