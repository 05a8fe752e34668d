"""Engines: render a recipe into a framework's launch command and run it (torchtitan), or print it (slime)."""
