"""The planner's named data: a part's links (its hardware/gpus.yaml block) and calibration (calibration.yaml)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from openrecipes.catalog.hardware import GpuSpec
from openrecipes.catalog.paths import default_catalog_root
from openrecipes.catalog.yamlio import YamlDocument, read_yaml
from openrecipes.errors import UserError
from openrecipes.probe.tables import tables_for

HERE = Path(__file__).parent
GB = 1e9
GIB = 2**30
BF16_BYTES = 2
FP32_BYTES = 4


@dataclass(frozen=True)
class Links:
    gpu_type: str
    variant: str  # the hardware variant (hardware/gpus.yaml key)
    capacity_gib: float
    gpus_per_nvlink_domain: int
    nvlink_bytes_per_s: float  # one direction, per GPU
    network_bytes_per_s: float  # one direction, per GPU
    gpus_per_node: int  # a job takes whole nodes (a GB200/GB300 compute tray holds 4 of an NVLink domain's 72)
    # NCCL's bus bandwidth inside the domain as a probe of the part measured it (an all-reduce of the largest message
    # among the whole domain), in place of the link's datasheet figure times the assumed bus efficiency
    measured_nvlink_bytes_per_s: float | None = None
    catalog_root: Path | None = None  # the catalog whose hardware/gpus.yaml holds the part (None: the bundled one)


EFFICIENCY = "compute_efficiency."  # prefix of the fitted efficiencies' names in calibration.yaml
LOW_PRECISION = "low_precision_efficiency."  # prefix of the fitted low-precision GEMM residuals' names
EXPOSED = "exposed_communication."  # prefix of the exposed shares of collectives that are fitted, not assumed


@dataclass(frozen=True)
class Calibration:
    # A residual factor on the modelled compute time (openrecipes.plan.compute) by "engine/variant", for each variant
    # with measured points of the engine: what the operators' physics leaves unexplained, pulled towards 1
    compute_efficiency: dict[str, float]
    cpu_optimizer_params_per_s_per_gpu: float
    amp_composite_norm_s_per_element: float  # eager torchtitan under AMP: seconds per normalized element
    exposed_communication: dict[str, float]
    nvlink_bus_efficiency: float
    network_bus_efficiency: float
    selective_recompute_time_factor: dict[str, float]  # by engine
    runtime_reserve_gib: float
    # Share of a step's compute time memory-bound (norms, activations, softmax): what HBM bandwidth carries between
    # variants of one chip (openrecipes.plan.variants)
    memory_bound_share: float = 0.0
    compile_speedup: float = 1.0  # compiled torchtitan compute runs this much faster
    cp_attention_efficiency: float = 1.0  # torchtitan CP: attention scores at this fraction of the efficiency
    microbatch_overhead_s_per_layer: float = 0.0  # torchtitan: host cost per layer per microbatch
    # eager torchtitan selective AC: extra host cost per layer per microbatch
    eager_sac_overhead_s_per_layer: float = 0.0
    grouped_gemm_half_rows: float = 0.0  # tokens per expert at which a grouped GEMM runs at half the efficiency
    torchtitan_expert_efficiency: float = 1.0  # torchtitan's routed experts: their share of Megatron's efficiency
    megatron_expert_efficiency: float = 1.0  # Megatron's routed experts: their share of its dense efficiency
    routing_load_cv: float = 0.0  # a trained router: the coefficient of variation of an expert's tokens
    # A collective's latency (openrecipes.plan.comm): once per collective, and per ring step inside the NVLink domain
    # and across the fabric (NCCL's Simple-protocol ring figures, src/graph/tuning.cc)
    collective_base_latency_s: float = 8.4e-6
    nvlink_step_latency_s: float = 3.4e-6
    network_step_latency_s: float = 9.6e-6
    # The block GEMMs in a low precision (fp8, mxfp8, nvfp4): a residual factor on the datasheet's efficiency there
    low_precision_efficiency: dict[str, float] = field(default_factory=dict)
    # openrecipes.plan.compute's curves: a GEMM's share of peak for large shapes per precision (assumed), the smallest
    # dimension at which it reaches half that (fitted), flash attention's ceiling (fitted) and its half sizes
    gemm_efficiency_ceiling: dict[str, float] = field(default_factory=dict)
    gemm_half_dim: float = 128.0
    attention_efficiency: float = 0.6
    attention_half_seq: float = 512.0
    attention_half_head_dim: float = 64.0
    hbm_efficiency: float = 1.0  # achieved share of the datasheet's HBM bandwidth in streaming kernels

    def fitted_values(self) -> dict[str, float]:
        """Every fitted value by its calibration.yaml name."""
        return {**{EFFICIENCY + key: value for key, value in self.compute_efficiency.items()},
                **{LOW_PRECISION + key: value for key, value in self.low_precision_efficiency.items()},
                **{EXPOSED + key: value for key, value in self.exposed_communication.items()
                   if EXPOSED + key in calibration_document()["fitted"]},
                **{name: getattr(self, name) for name in FITTED_FIELDS}}

    def without(self, names: frozenset[str]) -> Calibration:
        """This calibration without the named efficiencies (a variant left out of the fit: openrecipes.plan.fit)."""
        kept = {key: value for key, value in self.compute_efficiency.items() if EFFICIENCY + key not in names}
        return replace(self, compute_efficiency=kept)

    def with_values(self, values: dict[str, float]) -> Calibration:
        """This calibration with the named fitted values replaced."""
        efficiency, speedup = dict(self.compute_efficiency), dict(self.low_precision_efficiency)
        exposed = dict(self.exposed_communication)
        fields: dict[str, Any] = {}
        for name, value in values.items():
            for prefix, found in ((EFFICIENCY, efficiency), (LOW_PRECISION, speedup), (EXPOSED, exposed)):
                if name.startswith(prefix):
                    found[name[len(prefix):]] = value
                    break
            else:
                fields[name] = value
        return replace(self, compute_efficiency=efficiency, low_precision_efficiency=speedup,
                       exposed_communication=exposed, **fields)


# The fitted values that are plain fields of Calibration (the efficiencies are a dict).
FITTED_FIELDS = ("compile_speedup", "cp_attention_efficiency", "microbatch_overhead_s_per_layer",
                 "eager_sac_overhead_s_per_layer", "amp_composite_norm_s_per_element", "grouped_gemm_half_rows",
                 "torchtitan_expert_efficiency", "megatron_expert_efficiency", "routing_load_cv", "gemm_half_dim",
                 "attention_efficiency", "network_step_latency_s")


def links(variant: str, gpu: GpuSpec, catalog_root: Path | None = None) -> Links:
    """A part's memory and links as the planner reads them, from its hardware/gpus.yaml block and, where the catalog
    holds a probe of the part, its measured bus bandwidth inside the domain. Without the driver's memory.total, the
    vendor's GB is read as decimal: the smaller, safe reading. Datasheets print scale-up bandwidth both directions
    together; a collective moves each byte one way, so half of it is the planner's."""
    capacity = gpu.capacity_gib if gpu.capacity_gib is not None else gpu.memory_gb * GB / GIB
    probe = tables_for(variant, catalog_root or default_catalog_root())
    measured = probe.collective_bytes_per_s("all_reduce", PROBED_MESSAGE_BYTES, gpu.scale_up.domain) if probe else None
    return Links(gpu.type, variant, capacity, gpu.scale_up.domain, gpu.scale_up.gb_s / 2 * GB,
                 gpu.scale_out.gbit_s / 8 * GB, gpu.gpus_per_node or gpu.scale_up.domain, measured, catalog_root)


# The message a probe's bus bandwidth is read at: 1 GiB, the largest a probe measures, where NCCL reaches its peak.
PROBED_MESSAGE_BYTES = 2**30


CALIBRATION_FILE = HERE / "calibration.yaml"
# A fitted value is pulled towards its prior with a spread of about one in log units: a value a hundred times its
# prior (or a hundredth of it) is no fit but an edit.
MAX_FROM_PRIOR = 100.0
# Shares that cannot exceed the whole: an efficiency (of peak FLOP/s, of a link's bandwidth), an exposed share.
AT_MOST_ONE = ("efficiency", "exposed_communication")
# Residual factors on a modelled time, not shares: they may exceed 1 where the physics predicts too slow.
RESIDUALS = (f"fitted.{EFFICIENCY}", f"fitted.{LOW_PRECISION}", "fitted.torchtitan_expert_efficiency",
             "fitted.megatron_expert_efficiency")


def calibration_problems(doc: YamlDocument) -> list[str]:
    """Each value of calibration.yaml that is not a finite number in its range, as `file:line: field ...; fix`.
    Fitted values, priors and spreads are positive, a fitted value within MAX_FROM_PRIOR of its prior; measured
    and assumed values are at least 0; shares (AT_MOST_ONE, not RESIDUALS) at most 1."""
    problems: list[str] = []

    def bad(dotted: str, why: str) -> None:
        problems.append(f"{doc.path}:{doc.line_of(dotted)}: {dotted} {why}; fix it there (`git checkout` the file "
                        "undoes an edit), then run `openrecipes refresh`")

    def number(dotted: str, value: object, positive: bool) -> float | None:
        share = any(word in dotted for word in AT_MOST_ONE) and not dotted.startswith(RESIDUALS)
        written = doc.raw.get(dotted, repr(value))
        if isinstance(value, bool) or not isinstance(value, int | float):
            hint = " (a decimal point makes it one: 1.0e+3, not 1e3)" if re.fullmatch(r"[-+]?\d+e[-+]?\d+", written,
                                                                                      re.IGNORECASE) else ""
            bad(dotted, f"is '{written}', not a number{hint}")
        elif not math.isfinite(value) or value < 0 or (positive and value == 0) or (share and value > 1):
            bad(dotted, f"is {written}, outside {'(0' if positive else '[0'}, {'1]' if share else 'inf)'}")
        else:
            return float(value)
        return None

    def mapping(value: object) -> dict:
        return value if isinstance(value, dict) else {}

    data = mapping(doc.data)
    for section in ("fitted", "measured", "assumed"):
        if not isinstance(data.get(section), dict):
            bad(section, "is missing or not a mapping")
    for name, row in mapping(data.get("fitted")).items():
        where = f"fitted.{name}"
        if not isinstance(row, dict) or "value" not in row or "prior" not in row:
            bad(where, "needs a value and a prior")
            continue
        value, prior = number(f"{where}.value", row["value"], True), number(f"{where}.prior", row["prior"], True)
        if "prior_sigma" in row:
            number(f"{where}.prior_sigma", row["prior_sigma"], True)
        if value is not None and prior is not None and not 1 / MAX_FROM_PRIOR <= value / prior <= MAX_FROM_PRIOR:
            bad(f"{where}.value", f"is {doc.raw.get(where + '.value')}, more than {MAX_FROM_PRIOR:g} times off its "
                f"prior {doc.raw.get(where + '.prior')}")
    for name, row in mapping(data.get("measured")).items():
        number(f"measured.{name}.value", mapping(row).get("value"), False)
    pending = [(f"assumed.{key}", value) for key, value in mapping(data.get("assumed")).items()]
    while pending:
        dotted, value = pending.pop(0)
        if isinstance(value, dict):
            pending += [(f"{dotted}.{key}", inner) for key, inner in value.items()]
        else:
            number(dotted, value, dotted.endswith("sigma"))
    return problems


@lru_cache(maxsize=1)
def calibration_document() -> dict:
    """calibration.yaml, every value in its range (calibration_problems): the first problem is a UserError."""
    doc = read_yaml(CALIBRATION_FILE)
    problems = calibration_problems(doc)
    if problems:
        raise UserError(problems[0])
    return doc.data


def calibration() -> Calibration:
    doc = calibration_document()
    assumed = doc["assumed"]
    base = Calibration(
        compute_efficiency={}, amp_composite_norm_s_per_element=0.0,
        cpu_optimizer_params_per_s_per_gpu=doc["measured"]["cpu_optimizer_params_per_s_per_gpu"]["value"],
        **{name: assumed[name] for name in ("exposed_communication", "nvlink_bus_efficiency", "network_bus_efficiency",
                                            "selective_recompute_time_factor", "runtime_reserve_gib",
                                            "memory_bound_share", "gemm_efficiency_ceiling", "attention_half_seq",
                                            "attention_half_head_dim", "hbm_efficiency", "collective_base_latency_s",
                                            "nvlink_step_latency_s")})
    return base.with_values({name: row["value"] for name, row in doc["fitted"].items()})


def priors() -> dict[str, float]:
    """Each fitted value's prior: what the fit falls back to where no measured point constrains it."""
    return {name: row["prior"] for name, row in calibration_document()["fitted"].items()}


def prior_sigmas() -> dict[str, float]:
    """Each fitted value's prior spread in log units: its own where physics bounds it, else `assumed.prior_sigma`."""
    doc = calibration_document()
    return {name: row.get("prior_sigma", doc["assumed"]["prior_sigma"]) for name, row in doc["fitted"].items()}
