"""The planner's named data: per-GPU-type links (interconnect.yaml) and calibration (calibration.yaml)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from openrecipes.catalog.hardware import GpuSpec
from openrecipes.catalog.yamlio import read_yaml
from openrecipes.errors import UserError

HERE = Path(__file__).parent
GB = 1e9
GIB = 2**30
BF16_BYTES = 2
FP32_BYTES = 4


@dataclass(frozen=True)
class Links:
    gpu_type: str
    capacity_gib: float
    gpus_per_nvlink_domain: int
    nvlink_bytes_per_s: float  # one direction, per GPU
    network_bytes_per_s: float  # one direction, per GPU


@dataclass(frozen=True)
class Calibration:
    compute_efficiency: dict[str, float]  # by engine, or "engine/GPU" where that GPU type has its own fit
    cpu_optimizer_params_per_s_per_gpu: float
    amp_composite_norm_s_per_element: float  # eager torchtitan under AMP: seconds per normalized element
    exposed_communication: dict[str, float]
    nvlink_bus_efficiency: float
    network_bus_efficiency: float
    selective_recompute_time_factor: dict[str, float]  # by engine
    runtime_reserve_gib: float

    def efficiency(self, engine: str, gpu_type: str) -> float:
        """The engine's efficiency fitted on this GPU type where there is one, else the engine's."""
        return self.compute_efficiency.get(f"{engine}/{gpu_type}", self.compute_efficiency[engine])


@lru_cache(maxsize=1)
def interconnect_document() -> dict:
    return read_yaml(HERE / "interconnect.yaml").data


def links(gpu_type: str, gpu: GpuSpec) -> Links:
    table = interconnect_document()
    if gpu_type not in table:
        raise UserError(f"unknown: interconnect of {gpu_type} (add it to src/openrecipes/plan/interconnect.yaml)")
    row = table[gpu_type]
    # Without a measured memory.total, read the vendor's figure as decimal GB: the smaller, safe reading.
    capacity = row.get("capacity_gib", gpu.memory_gb * GB / GIB)
    return Links(gpu_type, capacity, row["gpus_per_nvlink_domain"], row["nvlink_gb_per_s"] * GB,
                 row["network_gb_per_s"] * GB)


@lru_cache(maxsize=1)
def calibration_document() -> dict:
    return read_yaml(HERE / "calibration.yaml").data


def calibration() -> Calibration:
    doc = calibration_document()
    assumed = doc["assumed"]
    return Calibration(
        compute_efficiency={engine: row["value"] for engine, row in doc["compute_efficiency"].items()},
        cpu_optimizer_params_per_s_per_gpu=doc["cpu_optimizer_params_per_s_per_gpu"]["value"],
        amp_composite_norm_s_per_element=doc["amp_composite_norm_s_per_element"]["value"],
        exposed_communication=assumed["exposed_communication"],
        nvlink_bus_efficiency=assumed["nvlink_bus_efficiency"],
        network_bus_efficiency=assumed["network_bus_efficiency"],
        selective_recompute_time_factor=assumed["selective_recompute_time_factor"],
        runtime_reserve_gib=assumed["runtime_reserve_gib"],
    )
