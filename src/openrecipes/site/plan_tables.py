"""The Plan pages' tables: the planner's ranked layouts of one model on N GPUs of one type, and their cache.

A table depends only on the model card, the hardware tables, the calibration and the planner's code, never on the
recipes, so it is computed once per (model, GPU type, count) and kept in a cache keyed by a hash of all of those
inputs (and of this file): a warm build reads it back in milliseconds, a change to any input recomputes it. The
cache lives in $OPENRECIPES_CACHE_DIR, else $XDG_CACHE_HOME/openrecipes, else ~/.cache/openrecipes.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict
from pathlib import Path

from openrecipes.atomic import write_atomic
from openrecipes.catalog.hardware import ReferenceTables
from openrecipes.plan.predict import PlanRequest, predict

# Fitting layouts shown per table, best predicted tokens/s first (predict's order).
PLAN_TOP = 15
# Layouts that do not fit shown under them: the fastest misses and the closest ones (least memory).
CLOSEST_MISSES = 2
FASTEST_MISSES = 3
CACHE_VERSION = 1
_PLAN_SOURCES = Path(__file__).resolve().parents[1] / "plan"
_FIGURES_SOURCE = Path(__file__).resolve().parents[1] / "figures.py"
_memory_cache: dict[str, dict] = {}


def _layout_key(row: dict) -> tuple:
    return row["label"], row["recompute"], row["offload_fraction"]


def _distinct(rows: list[dict], count: int) -> list[dict]:
    seen, kept = set(), []
    for row in rows:
        key = _layout_key(row)
        if key not in seen:
            seen.add(key)
            kept.append(row)
        if len(kept) == count:
            break
    return kept


def compute_table(request: PlanRequest, tables: ReferenceTables) -> dict:
    """One table from the planner's ranked predictions: the same objects `openrecipes plan --json` prints."""
    ranked = predict(request, tables)
    fitting = [p for p in ranked if p.fits]
    not_fitting = ranked[len(fitting):]
    # With nothing fitting, the closest misses say how far off the count is; otherwise the fastest misses say
    # what stops the layouts that would win, and the two closest show where the memory boundary lies.
    closest = [dict(row, note="closest to fitting") for row in _distinct(
        [p.as_json() for p in not_fitting[:50]], CLOSEST_MISSES if fitting else CLOSEST_MISSES + FASTEST_MISSES)]
    best = fitting[0].tokens_per_s_per_gpu if fitting else float("inf")
    faster = [p.as_json() for p in sorted(not_fitting, key=lambda p: -p.tokens_per_s_per_gpu)[:50]
              if p.tokens_per_s_per_gpu > best]
    notable = [dict(row, note="faster than #1") for row in _distinct(faster, FASTEST_MISSES)]
    shown = {_layout_key(row) for row in notable}
    notable += [row for row in closest if _layout_key(row) not in shown]
    return {"valid": len(ranked), "fitting": len(fitting), "capacity_gib": ranked[0].capacity_gib,
            "rows": [p.as_json() for p in fitting[:PLAN_TOP]], "misses": notable,
            "fitting_tokens": [p.tokens_per_s_per_gpu for p in fitting]}


def _code_fingerprint() -> str:
    digest = hashlib.sha256()
    for path in sorted(_PLAN_SOURCES.glob("*.py")) + sorted(_PLAN_SOURCES.glob("*.yaml")) + [_FIGURES_SOURCE,
                                                                                             Path(__file__)]:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def cache_key(request: PlanRequest, tables: ReferenceTables, code: str) -> str:
    inputs = {"version": CACHE_VERSION, "code": code, "request": asdict(request),
              "model": tables.models[request.model].model_dump(mode="json"),
              "gpus": {name: row.model_dump(mode="json") for name, row in tables.gpus.items()},
              "instances": {name: row.model_dump(mode="json") for name, row in tables.instances.items()}}
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()


def cache_dir() -> Path:
    base = os.environ.get("OPENRECIPES_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "openrecipes")
    return Path(base) / "plan-tables"


def _read_cached(key: str) -> dict | None:
    if key in _memory_cache:
        return _memory_cache[key]
    try:
        data = json.loads((cache_dir() / f"{key}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    _memory_cache[key] = data
    return data


def _write_cached(key: str, data: dict) -> None:
    _memory_cache[key] = data
    folder = cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        write_atomic(folder / f"{key}.json", json.dumps(data))
    except OSError:
        pass  # a read-only cache only costs the next build the computation


def plan_tables(requests: list[PlanRequest], tables: ReferenceTables) -> tuple[dict[PlanRequest, dict], int]:
    """Each request's table, from the cache or computed (and cached); also how many were computed."""
    code = _code_fingerprint()
    found = {}
    computed = 0
    for request in requests:
        key = cache_key(request, tables, code)
        data = _read_cached(key)
        if data is None:
            data = compute_table(request, tables)
            _write_cached(key, data)
            computed += 1
        found[request] = data
    return found, computed
