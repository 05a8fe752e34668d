"""Engines, one folder each (torchtitan/, megatron/ for Megatron-LM and slime), listed by registry.py.

Two floors live here. Engine knowledge (knowledge.py, registry.py and each engine's engine.py, flags.py, logs.py,
layouts.py) imports only floor-1 modules, so the catalog, measure and plan rooms ask it. The runners (cli.py,
execute.py, launch.py, torchtitan's render/rows/train, megatron's dry_run) render a recipe into its engine's
command and run it (torchtitan) or print it (slime), and sit above verify and audit.
"""
