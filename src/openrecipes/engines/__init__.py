"""What each engine is and how it runs, one folder each (torchtitan/, megatron/ for Megatron-LM and slime), listed by
registry.py: its flag <-> field table, log formats, layout rules, how to tell its recipes, and its runner (the one
interface of runner.py). It imports floor-1 modules only, so the catalog, measure and plan rooms ask it; code that
runs on the GPUs under an engine (torchtitan's torchrun entry) lives in openrecipes.launch.<name>."""
