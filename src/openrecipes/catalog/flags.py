"""Which launch flag carries which recipe field, per engine: the validator checks each pair agrees.

A row is (flag, dotted recipe field, kind, value the engine assumes when the flag is absent). `switch` flags
carry a boolean by their presence; `list` flags carry a list field as one comma-separated value, absent when the
list is empty; a `marks` flag carries its fixed value exactly when its field is set (the value column holds it).
`layout.recompute` null means none, `layout.offload` null means off.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["int", "float", "str", "switch", "list", "marks"]


@dataclass(frozen=True)
class FlagField:
    flag: str
    field: str
    kind: Kind
    default: object = None


MEGATRON = (
    FlagField("--tensor-model-parallel-size", "layout.tp", "int", 1),
    FlagField("--pipeline-model-parallel-size", "layout.pp", "int", 1),
    FlagField("--virtual-pipeline-model-parallel-size", "layout.vpp", "int", 1),
    FlagField("--context-parallel-size", "layout.cp", "int", 1),
    FlagField("--expert-model-parallel-size", "layout.ep", "int", 1),
    FlagField("--expert-tensor-parallel-size", "layout.etp", "int"),  # Megatron defaults it to TP: be explicit
    FlagField("--sequence-parallel", "layout.sequence_parallel", "switch"),
    FlagField("--decoder-first-pipeline-num-layers", "layout.layer_split.first", "int"),
    FlagField("--decoder-last-pipeline-num-layers", "layout.layer_split.last", "int"),
    FlagField("--max-tokens-per-gpu", "layout.max_tokens_per_gpu", "int"),
    FlagField("--global-batch-size", "workload.global_batch", "int"),
    FlagField("--recompute-granularity", "layout.recompute.granularity", "str"),
    FlagField("--recompute-method", "layout.recompute.method", "str"),
    FlagField("--recompute-num-layers", "layout.recompute.num_layers", "int"),
    FlagField("--optimizer-cpu-offload", "layout.offload", "switch"),
    FlagField("--optimizer-offload-fraction", "layout.offload.optimizer_fraction", "float"),
    FlagField("--overlap-cpu-optimizer-d2h-h2d", "layout.offload.overlap_d2h_h2d", "switch"),
    FlagField("--moe-token-dispatcher-type", "layout.dispatcher", "str"),
    FlagField("--num-rollout", "result.steps_per_run", "int"),
    FlagField("--actor-num-gpus-per-node", "gpu.per_node", "int"),
)
# Written only by some seeds: checked when present (slime passes the row length inside the data otherwise).
MEGATRON_WHEN_PRESENT = (FlagField("--seq-length", "workload.row_tokens", "int"),)

TORCHTITAN = (
    FlagField("--parallelism.tensor_parallel_degree", "layout.tp", "int", 1),
    FlagField("--parallelism.pipeline_parallel_degree", "layout.pp", "int", 1),
    FlagField("--parallelism.context_parallel_degree", "layout.cp", "int", 1),
    FlagField("--parallelism.expert_parallel_degree", "layout.ep", "int", 1),
    FlagField("--parallelism.expert_tensor_parallel_degree", "layout.etp", "int", 1),
    FlagField("--parallelism.data_parallel_shard_degree", "layout.fsdp", "int"),
    FlagField("--training.global_batch_size", "workload.global_batch", "int"),
    FlagField("--training.local_batch_size", "layout.rows_per_microbatch", "int"),
    FlagField("--training.seq_len", "workload.row_tokens", "int"),
    FlagField("--training.steps", "result.steps_per_run", "int"),
    FlagField("--activation_checkpoint.mode", "layout.recompute.granularity", "str", "none"),
    FlagField("--compile.enable", "layout.compile", "switch"),
    FlagField("--nproc_per_node", "gpu.per_node", "int"),
    FlagField("--openrecipes.kernels", "layout.kernels", "list"),
    FlagField("--openrecipes.attention", "layout.attention", "str"),
    FlagField("--model.converters", "layout.float8", "marks", "quantize.linear.float8"),
    FlagField("--quantize.linear.float8.recipe_name", "layout.float8.scaling", "str"),
    FlagField("--quantize.linear.float8.filter_fqns", "layout.float8.skip", "list"),
    FlagField("--quantize.linear.float8.enable_fsdp_float8_all_gather", "layout.float8.fsdp_float8_all_gather",
              "switch"),
    FlagField("--quantize.linear.float8.precompute_float8_dynamic_scale_for_fsdp", "layout.float8.precomputed_scales",
              "switch"),
)
