"""torchtitan 0.2.2: its flags, log reader and layout rules (engine.py gathers them)."""
