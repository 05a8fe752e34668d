"""The verify room: the convergence check, the configuration check and the component tests.

Nothing here imports the catalog (pydantic) at import time, so the component tests run where only torch,
numpy, typer, rich and pyyaml are installed.
"""
