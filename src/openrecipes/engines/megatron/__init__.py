"""Megatron-LM and slime (the seeds' engine): flags, log readers, layout rules (engine.py gathers them)."""
