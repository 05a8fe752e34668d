"""torchtitan 0.2.2: its command, flags, log reader, layout rules and runner (engine.py gathers them)."""
