"""The seals of the derived data: what each file `openrecipes refresh` writes was computed from, as one hash.

A plan file's `fingerprint` (plans/<model>.json) is the sha256 of (1) its inputs: the planner's version
(`openrecipes.plan.PLANNER_VERSION`), the planner's data (calibration.yaml, reference_points.yaml) and the held-out
table it draws its ranges from (derived/heldout.json), the model's card, its recipes and published entries, every
hardware part, probe table and instance price (a table plans every GPU type); (2) the file's name; (3) the file's
own text with the fingerprint left empty. A changed input makes that plan stale, and only that plan where the input
is its own (a new recipe of one model, its card); an edited figure, a file copied over another model's, or one cut
short no longer matches its own seal.

The code is not an input: a refactor, a comment or a speed-up leaves every plan current. A change that changes what
a plan contains bumps PLANNER_VERSION; `refresh --check` recomputes a sample of the plans and compares their
contents, so a forgotten bump fails CI all the same.

The held-out tables (derived/heldout.json, derived/public_record.json) are sealed the same way by `derived_inputs`:
the planner's version and data, every measured point (recipes, record, tune and sweep arms under runs/), the model
cards and the hardware; refresh recomputes them only when that seal moved.

The inputs are hashed as what they mean, not as bytes: YAML and JSON as their parsed data, recipes and cards
without their notes for a plan (a note changes no figure of a plan), and without a recipe's `engine:`, which
its hashed `run` command already names (the validator holds the two equal).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Container, Iterable
from pathlib import Path

from openrecipes.catalog.hardware import hardware_dir
from openrecipes.catalog.store import Catalog, SummaryEntry
from openrecipes.catalog.yamlio import read_yaml
from openrecipes.errors import UserError
from openrecipes.plan import PLANNER_VERSION
from openrecipes.plan.constants import HERE
from openrecipes.plan.fitted_on import fitted_slugs, is_fitted
from openrecipes.plan.points import reference_rows
from openrecipes.plan.trust import HELDOUT_FILE
from openrecipes.textfile import MIB, read_text, shown

EXPORT_VERSION = 4  # the seal's own recipe: bumped when what is hashed below changes
NAMED_BY_RUN = {"engine"}  # a recipe's fields its hashed `run` command already gives
PLANNER_DATA = ("calibration.yaml", "reference_points.yaml")  # src/openrecipes/plan/, kept by hand and by refresh
MAX_SOURCE_BYTES = 64 * MIB
SEALED = re.compile(r'\{\n "fingerprint": "([0-9a-f]{64})"')


def data_text(path: Path) -> str:
    """A YAML or JSON file as its parsed data (comments and layout left out); an absent file as nothing."""
    if not path.is_file():
        return ""
    if path.suffix == ".json":
        try:
            data = json.loads(read_text(path, MAX_SOURCE_BYTES, "planner data file"))
        except json.JSONDecodeError as error:
            raise UserError(f"{shown(path)}: not valid JSON ({error}); run `openrecipes refresh`") from None
    else:
        data = read_yaml(path).data
    return json.dumps(data, sort_keys=True, default=str)


def _digest(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def _hardware(catalog: Catalog) -> dict:
    """Every part, instance price and probe table: a plan's tables and the fit read them."""
    tables = catalog.tables
    probes = hardware_dir(catalog.root) / "probes"
    return {"gpus": {n: g.model_dump(mode="json") for n, g in tables.variants.items()},
            "instances": {n: i.model_dump(mode="json") for n, i in tables.instances.items()},
            "probes": {p.name: data_text(p) for p in sorted(probes.glob("*.json"))} if probes.is_dir() else {}}


def _planner_data() -> dict[str, str]:
    return {name: data_text(HERE / name) for name in PLANNER_DATA}


def plan_inputs(catalog: Catalog) -> dict[str, str]:
    """Each model's plan seal input (`plan_models`' models and any other with a card), by model: the shared inputs
    (the planner's version and data, the held-out table, the hardware) and the model's own (its card, recipes and
    published entries, notes left out)."""
    shared = _digest(EXPORT_VERSION, PLANNER_VERSION, _planner_data(), data_text(HELDOUT_FILE), _hardware(catalog))
    own: dict[str, dict[str, list[str]]] = {}
    for entry in catalog.entries:
        own.setdefault(entry.entry.model, {}).setdefault("entries", []).append(
            json.dumps(entry.entry.model_dump(mode="json", exclude={"notes", *NAMED_BY_RUN}), sort_keys=True))
    for record in catalog.record:
        own.setdefault(record.entry.model, {}).setdefault("record", []).append(
            json.dumps([record.slug, record.entry.model_dump(mode="json", exclude={"note"})], sort_keys=True))
    cards = catalog.tables.models
    return {model: _digest(shared, model, cards[model].model_dump(mode="json", exclude={"notes", "notes_source"})
                           if model in cards else None, sorted(own.get(model, {}).get("entries", [])),
                           sorted(own.get(model, {}).get("record", [])))
            for model in sorted(set(cards) | set(own))}


def _record_texts(entries: Iterable[SummaryEntry]) -> list[str]:
    """Published entries as what they mean, their notes kept (a source's caveats are read from them)."""
    return sorted(json.dumps([e.slug, e.entry.model_dump(mode="json")], sort_keys=True) for e in entries)


def _cards(catalog: Catalog, models: Container[str] | None = None) -> dict[str, dict]:
    """The model cards (of `models` only, where given) as what they mean."""
    return {n: c.model_dump(mode="json") for n, c in catalog.tables.models.items() if models is None or n in models}


def derived_inputs(catalog: Catalog) -> str:
    """The seal of what the held-out tables are computed from: the planner's version and data, every measured point
    the planner is fitted on (openrecipes.plan.fitted_on) with its notes (a source's caveats are read from them),
    the tune and sweep arms, those points' model cards and the hardware. An entry added to the catalog since the
    fit leaves it as it was."""
    fitted = fitted_slugs()
    recipes = [e for e in catalog.entries if is_fitted(e.slug, fitted)]
    record = [e for e in catalog.record if is_fitted(e.slug, fitted)]
    models = {e.entry.model for e in (*recipes, *record)} | {row["model"] for row in reference_rows()}
    arms = {p.relative_to(catalog.root).as_posix(): data_text(p)
            for pattern in ("runs/tune-*/tune.json", "runs/sweep-*/*.json") for p in sorted(catalog.root.glob(pattern))}
    return _digest(EXPORT_VERSION, PLANNER_VERSION, _planner_data(), _hardware(catalog),
                   sorted(json.dumps(e.entry.model_dump(mode="json", exclude=NAMED_BY_RUN), sort_keys=True)
                          for e in recipes),
                   _record_texts(record), _cards(catalog, models), arms)


def record_inputs(catalog: Catalog) -> str:
    """The seal of the planner held against the public record (derived/public_record.json): the held-out tables'
    inputs and table, and every published entry with its card, fitted on or not (one added since the fit is in
    the table as the out-of-sample point it is)."""
    return _digest(derived_inputs(catalog), data_text(HELDOUT_FILE), _record_texts(catalog.record), _cards(catalog))


def _seal(inputs: str, name: str, unsealed: str) -> str:
    return hashlib.sha256(f"{inputs}\0{name}\0{unsealed}".encode()).hexdigest()


def sealed(unsealed: str, inputs: str, name: str) -> str:
    """A plan file's text (written with an empty fingerprint, its first key) with its seal in place."""
    return unsealed.replace('"fingerprint": ""', f'"fingerprint": "{_seal(inputs, name, unsealed)}"', 1)


def unsealed(text: str) -> str | None:
    """A plan file's text with its fingerprint left empty (what the export computed), or None: not a plan file."""
    found = SEALED.match(text)
    return None if found is None else text[:found.start(1)] + text[found.end(1):]


def seal_problem(text: str, inputs: str, name: str) -> str | None:
    """Why the text of plans/<name>.json is not what the export writes from these inputs, or None."""
    found = SEALED.match(text)
    if found is None:
        return "not a plan file the export wrote"
    if _seal(inputs, name, text[:found.start(1)] + text[found.end(1):]) != found.group(1):
        return "edited, or written before its inputs or the planner's version last changed"
    return None
