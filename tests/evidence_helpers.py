"""Shared by the evidence tests: a contributed "log" that is a page or a script with a real run's step lines in a
comment, in each form a browser could run, and a catalog holding them as reproductions (written by hand, as an
attacker would, past `reproduce`)."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

from site_helpers import REPO

OURS = "recipes/qwen3-8b/h200/openrecipes-fsdp2-compile-noac-mb1.yaml"
CANDIDATE = "runs/qwen3-8b-h200x2-openrecipes-fsdp2-compile-noac-mb1"
REFERENCE = "runs/qwen3-8b-h200x2-torchtitan-stock"
RERUN_LOG = "runs/reproductions/qwen3-8b-h200x2-rerun-20261130/ours/train.log"
PWNED = "window.__pwned=1;document.title='pwned'"  # what each payload does when it runs


def active_evidence(log_text: str) -> dict[str, str]:
    """File name -> text: the log's lines inside a comment of a page, an SVG, an XHTML page and a script, each
    carrying a payload that runs wherever the file is taken for what its name says."""
    script = f"<script>{PWNED}</script>"
    return {
        "page.html": f"<!doctype html><html><body>{script}<script src=\"evil.js\"></script>\n<!--\n{log_text}-->\n"
                     "</body></html>\n",
        "page.htm": f"<html><body><img src=x onerror=\"{PWNED}\">\n<!--\n{log_text}-->\n</body></html>\n",
        "page.xhtml": f"<?xml version=\"1.0\"?>\n<html xmlns=\"http://www.w3.org/1999/xhtml\"><body>{script}\n<!--\n"
                      f"{log_text}-->\n</body></html>\n",
        "image.svg": f"<svg xmlns=\"http://www.w3.org/2000/svg\" onload=\"{PWNED}\">\n<!--\n{log_text}-->\n</svg>\n",
        "evil.js": f"/*\n{log_text}*/\n{PWNED};\n",
    }


def attacker_catalog(root: Path) -> Path:
    """The Qwen3-8B recipes with their runs, OURS citing every active_evidence file as a reproduction."""
    for folder in ("models", "hardware", "recipes/qwen3-8b", CANDIDATE, REFERENCE, "runs/reproductions"):
        shutil.copytree(REPO / folder, root / folder)
    folder = root / "runs/reproductions/evil"
    folder.mkdir()
    recipe = root / OURS
    text = recipe.read_text(encoding="utf-8")
    entry = text[text.index("reproductions:\n") + len("reproductions:\n"):]
    for name, data in active_evidence((REPO / RERUN_LOG).read_text(encoding="utf-8")).items():
        (folder / name).write_text(data, encoding="utf-8")
        digest = hashlib.sha256(data.encode("utf-8")).hexdigest()
        text += entry.replace(RERUN_LOG, f"runs/reproductions/evil/{name}").replace(
            "e7c67f6cc18736b0ebbb7b2d15c2605a5db4929538bc25d6e8870405321d65b7", digest)
    recipe.write_text(text, encoding="utf-8")
    return root
