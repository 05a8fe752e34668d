"""What each engine is, one folder each (torchtitan/, megatron/ for Megatron-LM and slime), listed by registry.py:
its flag <-> field table, log formats, layout rules and how to tell its recipes. Knowledge only: it imports floor-1
modules, so the catalog, measure and plan rooms ask it; the runners live in openrecipes.launch."""
