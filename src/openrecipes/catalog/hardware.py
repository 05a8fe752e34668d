"""Reference tables beside the recipes: GPUs (peak FLOP/s), priced instances and model cards."""

from __future__ import annotations

import datetime
import hashlib
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import ConfigDict, Field, ValidationError, field_validator, model_validator

from openrecipes import figures
from openrecipes.catalog.model import Degree, Figure, Gpu, NonNegativeInt, PositiveInt, Strict, SummaryGpu
from openrecipes.catalog.paths import bundled_root
from openrecipes.catalog.yamlio import YamlDocument, read_yaml
from openrecipes.errors import UserError
from openrecipes.textfile import MIB, read_inside

MAX_CONFIG_BYTES = MIB  # a config.json is a few KB (model add reads at most this much)


class ScaleUp(Strict):
    """The GPU-to-GPU fabric inside one domain (NVLink, Infinity Fabric)."""

    link: str = Field(min_length=1)  # NVLink 3/4/5, Infinity Fabric (xGMI), ...
    gb_s: float = Field(gt=0, le=1e5, strict=True)  # GB/s per GPU, both directions together, as datasheets print it
    domain: Degree  # GPUs one fabric joins: 8 (HGX/DGX node, MI300X platform) or 72 (NVL72 rack)


class ScaleOut(Strict):
    """The network between scale-up domains, per GPU."""

    fabric: str = Field(min_length=1)  # InfiniBand NDR/XDR/HDR, EFA, RoCE, ...
    gbit_s: float = Field(gt=0, le=1e5, strict=True)  # Gb/s per GPU, one direction


class GpuSpec(Strict):
    """One hardware part: a block of hardware/gpus.yaml, the one home of its facts (docs/catalog.md)."""

    type: str  # the family (H100, H200, ...) instance prices and recipe folders name
    default: bool = False  # the variant the type means on its own: the part a user rents
    name: str
    peak_bf16_flops: float = Field(gt=0, le=1e18, strict=True)
    peak_fp8_flops: float | None = Field(None, gt=0, le=1e18, strict=True)  # shown beside an FP8 recipe's MFU
    peak_mxfp8_flops: float | None = Field(None, gt=0, le=1e18, strict=True)  # dense MXFP8 (Blackwell)
    peak_nvfp4_flops: float | None = Field(None, gt=0, le=1e18, strict=True)  # dense NVFP4 (Blackwell)
    memory_gb: Degree
    capacity_gib: float | None = Field(None, gt=0, le=1e6, strict=True)  # the driver's memory.total, GiB
    memory_bandwidth_tb_s: float = Field(gt=0, le=1e3, strict=True)  # HBM bandwidth of one GPU
    power_w: float = Field(gt=0, le=1e5, strict=True)  # board power it runs at: TDP or its cap
    scale_up: ScaleUp
    scale_out: ScaleOut
    gpus_per_node: Degree | None = None  # GPUs a node or tray holds, where not scale_up.domain (NVL72 trays: 4)
    published_as: list[str] = Field(default_factory=list)  # system names sources write for it
    reported_as: list[str] = Field(default_factory=list)  # device names the driver prints for it
    source: str
    date: datetime.date


class InstanceSpec(Strict):
    gpu: str
    gpus: Degree
    usd_per_hour: Figure
    source: str
    date: datetime.date


class ActiveParamsCard(Strict):
    count: PositiveInt
    source: str
    revision: str | None


class Architecture(Strict):
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


class ParameterCounts(Strict):
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


class ConfigSource(Strict):
    file: str  # the config.json, relative to the card's folder
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    origin: str  # where the config came from: repository, path and commit, or how it was written


class ModelCard(Strict):
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
    gpus: dict[str, GpuSpec]  # by type: the type's default variant (the part a user rents)
    variants: dict[str, GpuSpec]  # by variant id: every part of hardware/gpus.yaml
    instances: dict[str, InstanceSpec]
    models: dict[str, ModelCard]  # by model name
    model_files: dict[str, Path]  # model name -> card path (its stem is the recipes/ folder name)
    root: Path  # the catalog they were read from: its hardware/gpus.yaml is the one the planner reads for it


def _validated(row_model: type[Strict], data: Any, doc: YamlDocument, *key: object) -> Any:
    """`data` as a `row_model`; the first schema error names the file, its line and the field (under `key`)."""
    try:
        return row_model.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(p) for p in (*key, *first["loc"]))
        raise UserError(f"{doc.path}:{doc.line_of(field)}: {field}: {first['msg']}") from None


# How to fix a hardware/gpus.yaml block, by the top-level field its first error is in: a user writes each block by
# hand from datasheets, and a catalog written before scale_up/scale_out still carries the three flat link fields.
_ADD_A_PART = 'docs/catalog.md, "Adding a GPU part", gives every field with its unit'
_FLAT_LINK_FIELDS = ("nvlink_gb_s", "nvlink_domain", "scale_out_gbit_s")
_MOVED = ("the flat link fields are now nested: nvlink_gb_s is scale_up.gb_s, nvlink_domain is scale_up.domain, "
          f"scale_out_gbit_s is scale_out.gbit_s ({_ADD_A_PART})")
_GPU_FIXES = {
    "scale_up": "write the GPU-to-GPU fabric inside one domain as scale_up: {link: NVLink 4, gb_s: 900, domain: 8} "
                f"(gb_s: GB/s per GPU, both directions together; {_ADD_A_PART})",
    "scale_out": "write the network between domains as scale_out: {fabric: InfiniBand NDR, gbit_s: 400} "
                 f"(gbit_s: Gb/s per GPU, one direction; {_ADD_A_PART})",
    "memory_bandwidth_tb_s": f"give the HBM bandwidth of one GPU in TB/s, from its datasheet ({_ADD_A_PART})",
    "power_w": f"give the board power the part runs at in W: its TDP, or the cap it is held at ({_ADD_A_PART})",
} | dict.fromkeys(_FLAT_LINK_FIELDS, _MOVED)


def _gpu_part(key: str, block: Any, doc: YamlDocument) -> GpuSpec:
    """One block of hardware/gpus.yaml; its first error names the file, the line, the part and the field, and the
    fix."""
    try:
        return GpuSpec.model_validate(block)
    except ValidationError as error:
        errors = error.errors()
        first = next((e for e in errors if e["loc"] and e["loc"][0] in _FLAT_LINK_FIELDS), errors[0])
        loc = [str(p) for p in first["loc"]]
        field = ".".join((key, *loc))
        fix = _GPU_FIXES.get(loc[0] if loc else "", _ADD_A_PART)
        raise UserError(f"{doc.path}:{doc.line_of(field)}: {field}: {first['msg']}; {fix}") from None


def _load_gpus(path: Path) -> dict[str, GpuSpec]:
    doc = read_yaml(path)
    if not isinstance(doc.data, dict):
        raise UserError(f"{path}:1: expected a mapping of part id -> block; fix the file's top level")
    return {str(key): _gpu_part(str(key), block, doc) for key, block in doc.data.items()}


def _load_table(path: Path, row_model: type[Strict]) -> dict[str, Any]:
    doc = read_yaml(path)
    if not isinstance(doc.data, dict):
        raise UserError(f"{path}:1: expected a mapping of name -> row; fix the file's top level")
    return {str(key): _validated(row_model, row, doc, key) for key, row in doc.data.items()}


def _reference_dir(root: Path, name: str) -> Path:
    """A catalog folder may carry its own models/ and hardware/; otherwise the bundled ones apply."""
    own = root / name
    return own if own.is_dir() else bundled_root() / name


def hardware_dir(root: Path) -> Path:
    """The hardware folder whose tables apply to the catalog at root: its own, else the bundled one."""
    return _reference_dir(root, "hardware")


def _defaults_by_type(variants: dict[str, GpuSpec], path: Path) -> dict[str, GpuSpec]:
    """Each type's default variant, in the file's order; a type with none, or with two, is an error of the file."""
    defaults: dict[str, GpuSpec] = {}
    for variant_id, spec in variants.items():
        if spec.default:
            if spec.type in defaults:
                raise UserError(f"{path}: {variant_id}: default: a second default variant of {spec.type}; mark one "
                                "variant of each type `default: true`")
            defaults[spec.type] = spec
    types = {spec.type for spec in variants.values()}
    if missing := sorted(types - set(defaults)):
        raise UserError(f"{path}: no default variant of {', '.join(missing)}; mark the part a user rents "
                        "`default: true`")
    return {t: defaults[t] for t in dict.fromkeys(spec.type for spec in variants.values())}


def variant_id(spec: GpuSpec, tables: ReferenceTables) -> str:
    return next(key for key, row in tables.variants.items() if row is spec)


def variants_of(gpu_type: str, tables: ReferenceTables) -> list[str]:
    return [key for key, row in tables.variants.items() if row.type == gpu_type]


def variant_issue(gpu_type: str, variant: str, tables: ReferenceTables) -> str | None:
    """Why an entry's gpu.variant is wrong for its gpu.type (None when it is right)."""
    spec = tables.variants.get(variant)
    if spec is None:
        known = variants_of(gpu_type, tables) or list(tables.variants)
        return f"unknown GPU variant '{variant}'; known for {gpu_type}: {', '.join(known)} (hardware/gpus.yaml)"
    if spec.type != gpu_type:
        return (f"'{variant}' is a {spec.type}, not a {gpu_type}; known for {gpu_type}: "
                f"{', '.join(variants_of(gpu_type, tables))} (hardware/gpus.yaml)")
    return None


def resolve_gpu(name: str, tables: ReferenceTables | None = None) -> tuple[str, str]:
    """(type, variant id) of a GPU named by its type (its default variant) or by a variant id; a name that is
    neither is a UserError listing both."""
    tables = tables or load_reference_tables()
    if name in tables.variants:
        return tables.variants[name].type, name
    by_type = {t.lower(): t for t in tables.gpus}
    if name.lower() in by_type:
        gpu_type = by_type[name.lower()]
        return gpu_type, variant_id(tables.gpus[gpu_type], tables)
    raise UserError(f"unknown GPU type or variant '{name}'; known types: {', '.join(tables.gpus)}; known variants: "
                    f"{', '.join(tables.variants)} (hardware/gpus.yaml; docs/catalog.md, \"Adding a GPU part\", says "
                    "how to add one)")


def variant_of_system(system: str, tables: ReferenceTables) -> str:
    """The variant a source's system name stands for (its `published_as` in hardware/gpus.yaml)."""
    for key, spec in tables.variants.items():
        if system in spec.published_as:
            return key
    raise UserError(f"no variant of hardware/gpus.yaml is published as '{system}'; add the name to the published_as "
                    "of the part it ran on")


def variant_of_device(device: str, tables: ReferenceTables) -> str | None:
    """The variant a driver's device name stands for (its `reported_as`), None when no row lists it."""
    return next((key for key, spec in tables.variants.items() if device in spec.reported_as), None)


def _load_cards(folder: Path) -> tuple[dict[str, ModelCard], dict[str, Path]]:
    """Every card of `folder` (models/) by name, and its file. Two cards of one name are refused (the planner would
    read whichever came last), and so is a derived card whose config.json is not the one it was derived from: an
    edit by hand, another card's `model add` over it, or a kill between the two files' renames."""
    models: dict[str, ModelCard] = {}
    files: dict[str, Path] = {}
    for card_path in sorted(folder.glob("*.yaml")):
        doc = read_yaml(card_path)
        card = _validated(ModelCard, doc.data, doc)
        if card.name in files:
            raise UserError(f"{card_path}:{doc.line_of('name')}: name: '{card.name}' is also the name of "
                            f"{files[card.name]}; a model has one card: rename or remove one")
        if card.config is not None:
            _check_config(card_path, doc, card.config, folder)
        models[card.name], files[card.name] = card, card_path
    return models, files


def _check_config(card_path: Path, doc: YamlDocument, config: ConfigSource, folder: Path) -> None:
    """The card's config.sha256 is its config file's: a regular file under models/ (no link out, no FIFO)."""
    where = f"{card_path}:{doc.line_of('config.sha256')}: config.sha256"
    path = card_path.parent / config.file
    if not os.path.lexists(path):  # a card copied without its configs/ (the counts stand; nothing contradicts them)
        return
    data = read_inside(folder, path, MAX_CONFIG_BYTES, "model config")
    if hashlib.sha256(data).hexdigest() != config.sha256:
        raise UserError(f"{where}: is not the sha256 of {config.file}, so the card's counts are not that config's; "
                        f"derive the card again: openrecipes model add {card_path.parent / config.file} --name "
                        f"{card_path.stem} --out {card_path}")


@lru_cache(maxsize=8)
def load_reference_tables(root: Path | None = None) -> ReferenceTables:
    root = Path(root) if root else bundled_root()
    hardware = hardware_dir(root)
    models, model_files = _load_cards(_reference_dir(root, "models"))
    variants = _load_gpus(hardware / "gpus.yaml")
    return ReferenceTables(
        gpus=_defaults_by_type(variants, hardware / "gpus.yaml"),
        variants=variants,
        instances=_load_table(hardware / "instances.yaml", InstanceSpec),
        models=models,
        model_files=model_files,
        root=root,
    )


def peak_flops(gpu: str, tables: ReferenceTables | None = None) -> float:
    """The dense BF16 peak of a variant, or of a type's default variant."""
    tables = tables or load_reference_tables()
    return tables.variants[resolve_gpu(gpu, tables)[1]].peak_bf16_flops


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
    return getattr(spec, peak_column(precision))


@dataclass(frozen=True)
class EntryPeak:
    """The dense peak an entry's figures are held to: its GPU row, the gpus.yaml column and the value (None where
    the part has no tensor cores for the precision)."""

    gpu: str  # the hardware/gpus.yaml row
    column: str
    flops: float | None


def entry_peak(gpu: Gpu | SummaryGpu, precision: str | None, tables: ReferenceTables) -> EntryPeak | None:
    """The dense peak of the GPU an entry's `gpu:` block names, at the entry's precision; an entry that states no
    precision is held to the fastest peak the part has. None where gpus.yaml has no such GPU (a finding of its own).
    Every plausibility check looks its peak up here, so the row an entry names is found in one place."""
    spec = tables.variants.get(gpu.variant)
    if spec is None or spec.type != gpu.type:
        return None
    column = peak_column(precision) if precision is not None else max(
        (c for c in _ALL_COLUMNS if getattr(spec, c) is not None), key=lambda c: getattr(spec, c))
    return EntryPeak(gpu.variant, column, getattr(spec, column))


def usd_per_gpu_hour(instance: str, tables: ReferenceTables | None = None) -> float:
    tables = tables or load_reference_tables()
    if instance not in tables.instances:
        raise UserError(
            f"unknown instance '{instance}'; known: {', '.join(tables.instances)} (hardware/instances.yaml)"
        )
    row = tables.instances[instance]
    return figures.usd_per_gpu_hour(row.usd_per_hour, row.gpus)
