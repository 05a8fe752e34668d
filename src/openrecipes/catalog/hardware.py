"""Reference tables beside the recipes: GPUs (peak FLOP/s), priced instances and model cards."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from openrecipes import figures
from openrecipes.catalog.paths import bundled_root
from openrecipes.catalog.yamlio import read_yaml
from openrecipes.errors import UserError


class _Row(BaseModel):
    model_config = ConfigDict(extra="forbid")


class GpuSpec(_Row):
    name: str
    peak_bf16_flops: float = Field(gt=0)
    memory_gb: int = Field(gt=0)
    source: str
    date: datetime.date


class InstanceSpec(_Row):
    gpu: str
    gpus: int = Field(gt=0)
    usd_per_hour: float = Field(gt=0)
    source: str
    date: datetime.date


class ActiveParamsCard(_Row):
    count: int = Field(gt=0)
    source: str
    revision: str | None


class ModelCard(_Row):
    name: str
    family: str
    architecture: dict[str, Any]
    active_params: ActiveParamsCard
    total_params: int | None
    total_params_note: str | None = None
    weights: str | None = None
    notes: list[str]
    notes_source: str

    @property
    def layers(self) -> int:
        return int(self.architecture["layers"])


@dataclass(frozen=True)
class ReferenceTables:
    gpus: dict[str, GpuSpec]
    instances: dict[str, InstanceSpec]
    models: dict[str, ModelCard]  # by model name
    model_files: dict[str, Path]  # model name -> card path (its stem is the recipes/ folder name)


def _load_table(path: Path, row_model: type[_Row]) -> dict[str, Any]:
    doc = read_yaml(path)
    if not isinstance(doc.data, dict):
        raise UserError(f"{path}:1: expected a mapping of name -> row; fix the file's top level")
    table = {}
    for key, row in doc.data.items():
        try:
            table[str(key)] = row_model.model_validate(row)
        except ValidationError as error:
            first = error.errors()[0]
            field = ".".join(str(p) for p in (key, *first["loc"]))
            raise UserError(f"{path}:{doc.line_of(field)}: {field}: {first['msg']}") from None
    return table


def _reference_dir(root: Path, name: str) -> Path:
    """A catalog folder may carry its own models/ and hardware/; otherwise the bundled ones apply."""
    own = root / name
    return own if own.is_dir() else bundled_root() / name


@lru_cache(maxsize=8)
def load_reference_tables(root: Path | None = None) -> ReferenceTables:
    root = Path(root) if root else bundled_root()
    hardware = _reference_dir(root, "hardware")
    models, model_files = {}, {}
    for card_path in sorted(_reference_dir(root, "models").glob("*.yaml")):
        doc = read_yaml(card_path)
        try:
            card = ModelCard.model_validate(doc.data)
        except ValidationError as error:
            first = error.errors()[0]
            field = ".".join(str(p) for p in first["loc"])
            raise UserError(f"{card_path}:{doc.line_of(field)}: {field}: {first['msg']}") from None
        models[card.name] = card
        model_files[card.name] = card_path
    return ReferenceTables(
        gpus=_load_table(hardware / "gpus.yaml", GpuSpec),
        instances=_load_table(hardware / "instances.yaml", InstanceSpec),
        models=models,
        model_files=model_files,
    )


def peak_flops(gpu_type: str, tables: ReferenceTables | None = None) -> float:
    tables = tables or load_reference_tables()
    if gpu_type not in tables.gpus:
        raise UserError(f"unknown GPU type '{gpu_type}'; known: {', '.join(tables.gpus)} (hardware/gpus.yaml)")
    return tables.gpus[gpu_type].peak_bf16_flops


def usd_per_gpu_hour(instance: str, tables: ReferenceTables | None = None) -> float:
    tables = tables or load_reference_tables()
    if instance not in tables.instances:
        raise UserError(
            f"unknown instance '{instance}'; known: {', '.join(tables.instances)} (hardware/instances.yaml)"
        )
    row = tables.instances[instance]
    return figures.usd_per_gpu_hour(row.usd_per_hour, row.gpus)
