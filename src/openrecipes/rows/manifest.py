"""manifest.json: what was built, from what, and the hashes a second machine must reproduce."""

from __future__ import annotations

import json
from pathlib import Path

from openrecipes.atomic import write_atomic

PERMUTATION = "numpy.random.Generator(numpy.random.PCG64(seed)).permutation(conversations)"
PACKING = ("source conversations in a seeded global permutation, concatenated with an EOS token between them and "
           "cut into consecutive {row_tokens}-token rows; rows without supervised targets are skipped")


def write_manifest(path: Path, manifest: dict) -> None:
    write_atomic(path, json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
