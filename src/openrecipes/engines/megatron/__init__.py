"""Megatron-LM and slime (the seeds' engine): flags, log readers, layout rules (engine.py gathers them), and the
dry run of their commands."""
