"""Reference tables beside the recipes: GPUs (peak FLOP/s), priced instances and model cards."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from openrecipes import figures
from openrecipes.catalog.model import Degree, Figure, NonNegativeInt, PositiveInt
from openrecipes.catalog.paths import bundled_root
from openrecipes.catalog.yamlio import read_yaml
from openrecipes.errors import UserError


class _Row(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class GpuSpec(_Row):
    name: str
    peak_bf16_flops: float = Field(gt=0, le=1e18, strict=True)
    peak_fp8_flops: float | None = Field(None, gt=0, le=1e18, strict=True)  # shown beside an FP8 recipe's MFU
    peak_mxfp8_flops: float | None = Field(None, gt=0, le=1e18, strict=True)  # dense MXFP8 (Blackwell)
    peak_nvfp4_flops: float | None = Field(None, gt=0, le=1e18, strict=True)  # dense NVFP4 (Blackwell)
    memory_gb: Degree
    memory_bandwidth_tb_s: float | None = Field(None, gt=0, le=1e3, strict=True)  # HBM bandwidth of one GPU
    nvlink_gb_s: float | None = Field(None, gt=0, le=1e5, strict=True)  # NVLink bandwidth of one GPU, both ways
    nvlink_domain: Degree | None = None  # GPUs one NVLink fabric joins: 8 (HGX/DGX node) or 72 (NVL72 rack)
    scale_out_gbit_s: float | None = Field(None, gt=0, le=1e5, strict=True)  # network per GPU between domains
    source: str
    date: datetime.date


class InstanceSpec(_Row):
    gpu: str
    gpus: Degree
    usd_per_hour: Figure
    source: str
    date: datetime.date


class ActiveParamsCard(_Row):
    count: PositiveInt
    source: str
    revision: str | None


class Architecture(_Row):
    """The architecture fields the validator, planner and engines read, typed; a card may carry more (its sources,
    descriptions), which are kept as written."""

    model_config = ConfigDict(extra="allow", allow_inf_nan=False)
    layers: Degree | None = None
    hidden_size: PositiveInt | None = None
    ffn_hidden_size: PositiveInt | None = None
    attention_heads: Degree | None = None
    query_groups: Degree | None = None
    kv_channels: PositiveInt | None = None
    padded_vocab_size: PositiveInt | None = None
    experts: NonNegativeInt | None = None
    expert_ffn_hidden_size: PositiveInt | None = None
    router_topk: Degree | None = None
    shared_experts: NonNegativeInt | None = None
    dense_layers: NonNegativeInt | None = None
    q_lora_rank: PositiveInt | None = None
    kv_lora_rank: PositiveInt | None = None
    qk_head_dim: PositiveInt | None = None
    qk_pos_emb_head_dim: PositiveInt | None = None
    v_head_dim: PositiveInt | None = None
    index_topk: PositiveInt | None = None
    index_heads: NonNegativeInt | None = None
    index_head_dim: NonNegativeInt | None = None
    window_size: PositiveInt | None = None
    window_attn_skip_freq: PositiveInt | None = None
    qk_norm: bool | None = None
    untied_embeddings: bool | None = None
    torchtitan_model: str | None = None
    torchtitan_flavor: str | None = None


class ParameterCounts(_Row):
    """A derived card's parameter counts (`openrecipes model add`, catalog/hf_config.py), each part of the total."""

    total: PositiveInt
    active: PositiveInt
    active_matmul: PositiveInt  # active weights of matmuls: no input embedding, norms, biases
    embedding: PositiveInt
    output_head: NonNegativeInt  # 0 when tied to the embedding
    final_norm: PositiveInt
    attention_per_layer: PositiveInt
    norms_per_layer: PositiveInt
    dense_mlp_per_layer: PositiveInt | None = None
    router_per_layer: PositiveInt | None = None
    expert: PositiveInt | None = None  # one routed expert
    shared_experts_per_layer: NonNegativeInt | None = None
    dense_layer: PositiveInt | None = None
    moe_layer: PositiveInt | None = None
    moe_layer_active: PositiveInt | None = None
    counted: str  # what is and is not counted

    @model_validator(mode="after")
    def _parts_add_up(self) -> ParameterCounts:
        for layer, parts in ((self.dense_layer, (self.dense_mlp_per_layer,)),
                             (self.moe_layer, (self.router_per_layer, self.shared_experts_per_layer))):
            if layer is not None and layer < self.attention_per_layer + self.norms_per_layer + sum(
                    part or 0 for part in parts):
                raise ValueError("a layer's count is less than its attention, norms and FFN; re-derive the card with "
                                 "`openrecipes model add`")
        if not self.active <= self.total or self.embedding + self.output_head + self.final_norm > self.total:
            raise ValueError("active exceeds total, or the embeddings exceed the total; re-derive the card with "
                             "`openrecipes model add`")
        return self


class ConfigSource(_Row):
    file: str  # the config.json, relative to the card's folder
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    origin: str  # where the config came from: repository, path and commit, or how it was written


class ModelCard(_Row):
    name: str
    family: str
    architecture: dict[str, Any]
    active_params: ActiveParamsCard
    total_params: PositiveInt | None
    total_params_note: str | None = None
    weights: str | None = None
    notes: list[str]
    notes_source: str
    parameters: ParameterCounts | None = None  # derived cards: every count, from `config`
    config: ConfigSource | None = None  # derived cards: the config.json they were derived from

    @model_validator(mode="after")
    def _derived_counts_are_the_cards(self) -> ModelCard:
        if self.parameters and (self.parameters.total != self.total_params
                                or self.parameters.active != self.active_params.count):
            raise ValueError("total_params and active_params.count must equal parameters.total and "
                             "parameters.active; re-derive the card with `openrecipes model add`")
        return self

    @field_validator("architecture")
    @classmethod
    def _typed_architecture(cls, value: dict[str, Any]) -> dict[str, Any]:
        # Kept a mapping (the planner reads it by key), its known fields typed: `layers: twenty-four` is an error;
        # a field written as null is a field not given.
        return Architecture.model_validate(value).model_dump(exclude_unset=True, exclude_none=True)

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


# The gpus.yaml column of the dense peak each precision's matmuls run at. FP16 runs at the BF16 rate on every part
# listed; FP32 runs no faster, so the BF16 peak bounds it; every FP8 scaling recipe runs at the FP8 tensor-core rate.
_PEAK_COLUMNS = {"bf16": "peak_bf16_flops", "fp16": "peak_bf16_flops", "fp32": "peak_bf16_flops",
                 "mxfp8": "peak_mxfp8_flops", "nvfp4": "peak_nvfp4_flops"}
_FP8_COLUMN = "peak_fp8_flops"
_ALL_COLUMNS = ("peak_bf16_flops", "peak_fp8_flops", "peak_mxfp8_flops", "peak_nvfp4_flops")


def peak_column(precision: str) -> str:
    """The hardware/gpus.yaml column that holds the dense peak of a training precision."""
    return _PEAK_COLUMNS.get(precision, _FP8_COLUMN)


def precision_peak_flops(spec: GpuSpec, precision: str) -> float | None:
    """The dense peak of the tensor-core format a precision runs its matmuls in; None where the vendor publishes
    none for this GPU (FP8 on an A100, NVFP4 on a Hopper)."""
    value: float | None = getattr(spec, peak_column(precision))
    return value


@dataclass(frozen=True)
class EntryPeak:
    """The dense peak an entry's figures are held to: its GPU row, the gpus.yaml column and the value (None where
    the part has no tensor cores for the precision)."""

    gpu: str  # the hardware/gpus.yaml row
    column: str
    flops: float | None


class GpuBlock(Protocol):
    """An entry's `gpu:` block as entry_peak reads it (a recipe's Gpu, a published entry's SummaryGpu)."""

    @property
    def type(self) -> str: ...


def entry_peak(gpu: GpuBlock, precision: str | None, tables: ReferenceTables) -> EntryPeak | None:
    """The dense peak of the GPU an entry's `gpu:` block names, at the entry's precision; an entry that states no
    precision is held to the fastest peak the part has. None where gpus.yaml has no such GPU (a finding of its own).
    Every plausibility check looks its peak up here, so the row an entry names is found in one place."""
    spec = tables.gpus.get(gpu.type)
    if spec is None:
        return None
    if precision is None:
        column = max((c for c in _ALL_COLUMNS if getattr(spec, c) is not None), key=lambda c: getattr(spec, c))
    else:
        column = peak_column(precision)
    return EntryPeak(gpu.type, column, getattr(spec, column))


def usd_per_gpu_hour(instance: str, tables: ReferenceTables | None = None) -> float:
    tables = tables or load_reference_tables()
    if instance not in tables.instances:
        raise UserError(
            f"unknown instance '{instance}'; known: {', '.join(tables.instances)} (hardware/instances.yaml)"
        )
    row = tables.instances[instance]
    return figures.usd_per_gpu_hour(row.usd_per_hour, row.gpus)
