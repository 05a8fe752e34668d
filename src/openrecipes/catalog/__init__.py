"""The catalog room: typed recipes, loading with file:line errors, validation, leaderboards.

Modules are imported by name (catalog.store, catalog.command, ...): reading a run command or a YAML file needs no
pydantic, so this package imports nothing itself.
"""
