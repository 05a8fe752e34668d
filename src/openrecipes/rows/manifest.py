"""manifest.json: what was built, from what, and the hashes a second machine must reproduce."""

from __future__ import annotations

import json
import os
from pathlib import Path

PERMUTATION = "numpy.random.Generator(numpy.random.PCG64(seed)).permutation(conversations)"
PACKING = ("source conversations in a seeded global permutation, concatenated with an EOS token between them and "
           "cut into consecutive {row_tokens}-token rows; rows without supervised targets are skipped")


def write_manifest(path: Path, manifest: dict) -> None:
    temporary = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    temporary.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
    os.replace(temporary, path)
