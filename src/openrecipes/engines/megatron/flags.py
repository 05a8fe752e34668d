"""Which Megatron-LM / slime launch flag carries which recipe field: the validator checks each pair agrees.

A row is (flag, dotted recipe field, kind, value Megatron assumes when the flag is absent). `switch` flags carry
a boolean by their presence; `layout.recompute` null means none, `layout.offload` null means off.
"""

from __future__ import annotations

from openrecipes.engines.knowledge import FlagField

FLAGS = (
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
FLAGS_WHEN_PRESENT = (FlagField("--seq-length", "workload.row_tokens", "int"),)
# slime starts nodes x GPUs per node: their product must be gpu.count.
NODE_FLAGS = ("--actor-num-nodes", "--actor-num-gpus-per-node")
# The layout a dry run shows, read back from the command: the parallel degrees, the token budget and the batch.
SHOWN_FIELDS = ("layout.tp", "layout.pp", "layout.cp", "layout.ep", "layout.etp", "layout.max_tokens_per_gpu",
                "workload.global_batch")
LAYERS_FLAG = "--num-layers"  # the model's decoder layers (MODEL_ARGS), checked against the model card
# Megatron's 2-byte gradient buffers (the planner's grad_reduce_bf16); no recipe field carries it.
GRAD_REDUCE_BF16 = "--grad-reduce-in-bf16"
