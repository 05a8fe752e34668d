"""Which torchtitan 0.2.2 launch flag carries which recipe field: the validator checks each pair agrees, `record`
reads a run's layout from them and its runner (runner.py) writes a recipe's launch from them, in this order.

A row is (flag, dotted recipe field, kind, value torchtitan assumes when the flag is absent). `switch` flags
carry a boolean by their presence; `list` flags carry a list field as one comma-separated value, absent when the
list is empty; a `marks` flag carries its fixed value exactly when its field is set (the value column holds it).
"""

from __future__ import annotations

from openrecipes.engines import torchrun
from openrecipes.engines.knowledge import FlagField

FLAGS = (
    FlagField("--training.seq_len", "workload.row_tokens", "int"),
    FlagField("--training.global_batch_size", "workload.global_batch", "int"),
    FlagField("--training.local_batch_size", "layout.rows_per_microbatch", "int"),
    FlagField("--training.steps", "result.steps_per_run", "int"),
    FlagField("--parallelism.data_parallel_shard_degree", "layout.fsdp", "int"),
    FlagField("--parallelism.tensor_parallel_degree", "layout.tp", "int", 1),
    FlagField("--parallelism.pipeline_parallel_degree", "layout.pp", "int", 1),
    FlagField("--parallelism.context_parallel_degree", "layout.cp", "int", 1),
    FlagField("--parallelism.expert_parallel_degree", "layout.ep", "int", 1),
    FlagField("--parallelism.expert_tensor_parallel_degree", "layout.etp", "int", 1),
    FlagField("--activation_checkpoint.mode", "layout.recompute.granularity", "str", "none"),
    FlagField("--activation_checkpoint.selective_ac_option", "layout.recompute.method", "str"),
    FlagField("--compile.enable", "layout.compile", "switch"),
    FlagField("--nproc_per_node", "gpu.per_node", "int"),
    # The levers beyond the layout: our entry module's two flags (Liger-Kernel fused kernels, the attention
    # backend) and torchtitan's own float8 converter flags (torchao's float8 training of the linear layers).
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
FLAGS_WHEN_PRESENT: tuple[FlagField, ...] = ()
NODE_FLAGS = torchrun.NODE_FLAGS  # torchrun's: their product must be gpu.count
# The model the command trains: torchtitan's model and flavor, named by the model card's architecture.
MODEL_FLAGS = {"--model.name": "torchtitan_model", "--model.flavor": "torchtitan_flavor"}
# Flags no recipe field carries: the replicas of each FSDP shard group (DP / FSDP, written by the renderer), and
# keeping parameters gathered from the forward to the backward (recipes carry it in `run`).
REPLICATE_FLAG = "--parallelism.data_parallel_replicate_degree"
NO_RESHARD = ("--parallelism.fsdp_reshard_after_forward", "never")
