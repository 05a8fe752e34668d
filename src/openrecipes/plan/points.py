"""The measured points' types and the tables they are planned on: the catalog's tables with the model cards of
reference_points.yaml and the reduced-depth cards its points name."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

from openrecipes.catalog.hardware import ActiveParamsCard, ModelCard, ReferenceTables, load_reference_tables
from openrecipes.catalog.yamlio import read_yaml
from openrecipes.plan.constants import HERE
from openrecipes.plan.layouts import Layout
from openrecipes.plan.predict import PlanRequest
from openrecipes.plan.shape import model_shape


@dataclass(frozen=True)
class MeasuredPoint:
    slug: str
    request: PlanRequest
    layout: Layout
    tokens_per_s_per_gpu: float | None  # None where the published speed is not comparable (e.g. FP8)
    memory_gib: float | None = None  # the allocator's measured peak, where published


@dataclass(frozen=True)
class SpeedPoint(MeasuredPoint):
    """A measured point with a comparable tokens/s figure: what the fitted values are fitted on."""

    tokens_per_s_per_gpu: float


@lru_cache(maxsize=1)
def _reference_document() -> dict:
    return read_yaml(HERE / "reference_points.yaml").data


def reduced_depth_name(model: str, layers: int) -> str:
    """The planner's name of a model's shape cut to `layers` decoder layers (a measured point's `layers:`)."""
    return f"{model}, {layers} layers"


def reduced_depth_card(card: ModelCard, layers: int) -> ModelCard:
    """The card of `layers` decoder layers of the card's shape: every layer as it is, the embedding and output head
    kept, the active parameters less the removed layers' (torchtitan's --openrecipes.layers cut)."""
    architecture = {**card.architecture, "layers": layers}
    cut = card.model_copy(update={"architecture": architecture})
    removed = model_shape(card).block_matmul_params - model_shape(cut).block_matmul_params
    active = card.active_params.model_copy(update={"count": card.active_params.count - removed})
    return cut.model_copy(update={"name": reduced_depth_name(card.name, layers), "active_params": active})


@lru_cache(maxsize=1)
def reference_tables() -> ReferenceTables:
    """The catalog's tables plus the model cards of reference_points.yaml (read and validated once), and the
    reduced-depth cards its points with `layers:` name."""
    tables = load_reference_tables()
    doc = _reference_document()
    cards = {name: ModelCard(name=name, family="reference point", architecture=row["architecture"],
                             active_params=ActiveParamsCard(count=row["active_params"], source=row["source"],
                                                            revision=None),
                             total_params=None, notes=[], notes_source=doc["source"])
             for name, row in doc["models"].items()}
    models = {**tables.models, **cards}
    cut = {reduced_depth_name(row["model"], row["layers"]): reduced_depth_card(models[row["model"]], row["layers"])
           for row in reference_rows() if "layers" in row}
    return replace(tables, models={**models, **cut})


def reference_rows() -> list[dict]:
    """Every point of reference_points.yaml: the published ones, then our own H200 runs (with log and window), each
    with the hardware variant of its section."""
    doc = _reference_document()
    return [*({**row, "variant": doc["variant"]} for row in doc["points"]),
            *({**row, "variant": doc["own_runs"]["variant"]} for row in doc["own_runs"]["points"])]


def reference_publisher() -> str:
    """The repository the published points of reference_points.yaml come from: the first word of its source."""
    return str(_reference_document()["source"]).split()[0]
