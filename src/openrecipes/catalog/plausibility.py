"""The physical bounds every figure we accept is held to: no entry may claim more than its GPU can do.

One module owns them; `validate` applies them to every recipe and record entry (catalog/checks.py,
catalog/published.py), so the writers that validate before writing (`reproduce --write`, `record`, `measure --write`,
the public-record importers) refuse the same figures, and `reproduce` refuses a run that breaks them.

- **Throughput**: tokens/s per GPU times the FLOPs one token costs (counted from the model card, figures.py) is model
  FLOP/s per GPU, which cannot exceed the dense peak of the GPU at the precision its matmuls ran in
  (hardware/gpus.yaml, looked up by hardware.entry_peak). The count is a lower bound of the work done (no recompute,
  no embedding lookup, the causal half of attention), so an entry refused here claims the impossible: a mistyped
  figure, the wrong GPU count, the wrong model, or a log whose step times are not the run's. A precision whose peak
  the part lacks (NVFP4 or MXFP8 on a Hopper, FP8 on an A100) is refused for the same reason.
- **Utilisation**: a published MFU is at most 100%.
- **Memory**: a published peak memory per GPU is at most the part's memory (its GB in GiB).
- **Microbatch**: the rows of one microbatch times the data-parallel ranks fit in the global batch, and the tokens
  one GPU holds in a microbatch fit in its memory: at the least, each layer of its pipeline stage keeps its input
  (tokens x hidden size x 2 bytes of BF16, split over tensor-parallel ranks), which is what full recompute keeps.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from openrecipes import figures
from openrecipes.catalog.hardware import GpuSpec, ModelCard, ReferenceTables, entry_peak
from openrecipes.catalog.model import Gpu, Recipe, SummaryGpu
from openrecipes.verdict import Finding

# What flops_per_token reads from every card (head widths come from kv_channels, the MLA fields or hidden / heads).
ATTENTION_FIELDS = frozenset({"layers", "hidden_size", "attention_heads", "padded_vocab_size"})
GIB = 2**30
ACTIVATION_BYTES = 2  # one BF16 value: the narrowest a layer's input is kept in by the engines we list
MAX_MFU_PERCENT = 100.0


def flops_per_token(card: ModelCard, seq_length: int, frozen_weights: bool = False) -> float:
    """Our count for one token of training: 6 x the active matmul parameters (4 for LoRA's frozen weights) plus the
    causal attention matmuls, a sliding window where the card has one (on all but every window_attn_skip_freq-th
    layer)."""
    arch = card.architecture
    attention = figures.attention_flops_per_token(int(arch["layers"]), figures.attention_score_width(arch), seq_length,
                                                  *figures.attention_window(arch))
    return figures.training_flops_per_token(_matmul_params(card), attention, frozen_weights)


def _matmul_params(card: ModelCard) -> int:
    arch = card.architecture
    return figures.matmul_params(card.active_params.count, int(arch["padded_vocab_size"]), int(arch["hidden_size"]),
                                 bool(arch.get("untied_embeddings", True)))


def least_flops_per_token(card: ModelCard, seq_length: int | None, frozen_weights: bool) -> float:
    """The FLOPs a token costs at least: our count where the card gives the attention shape and the entry its
    sequence length; the matmul parameters alone where it gives no sequence length; 6 (LoRA: 4) x the active
    parameters where the card has no shape."""
    if not card.architecture.keys() >= ATTENTION_FIELDS:
        return figures.training_flops_per_token(card.active_params.count, 0.0, frozen_weights)
    if seq_length is None:
        return figures.training_flops_per_token(_matmul_params(card), 0.0, frozen_weights)
    return flops_per_token(card, seq_length, frozen_weights)


@dataclass(frozen=True)
class Claim:
    """What an entry claims, with the fields that state it."""

    gpu: Gpu | SummaryGpu  # the entry's `gpu:` block
    precision: str | None  # None: the entry states none (it is held to the part's fastest peak)
    precision_field: str
    tokens_per_s_per_gpu: float
    seq_length: int | None
    frozen_weights: bool  # LoRA
    field: str = "result.tokens_per_s_per_gpu"  # the field stating the figure


def recipe_claim(recipe: Recipe, tokens_per_s_per_gpu: float, field: str) -> Claim:
    """A measured recipe's claim: its GPU and precision, a tokens/s per GPU it states (its result or a
    reproduction's) at its row length."""
    return Claim(recipe.gpu, recipe.workload.precision, "workload.precision", tokens_per_s_per_gpu,
                 recipe.workload.row_tokens, frozen_weights=False, field=field)


def implausible(claim: Claim, card: ModelCard | None, tables: ReferenceTables) -> Finding | None:
    """Why the claim is physically impossible on its GPU, or None. An unknown model or GPU is left to the checks
    that name it."""
    peak = entry_peak(claim.gpu, claim.precision, tables)
    if peak is None or card is None:
        return None
    if peak.flops is None:
        return Finding.at(claim.precision_field, f"is {claim.precision}, but a {peak.gpu} has no tensor cores for "
                          f"it (hardware/gpus.yaml gives {peak.gpu} no {peak.column}); give the precision the run used")
    per_token = least_flops_per_token(card, claim.seq_length, claim.frozen_weights)
    implied = figures.tflops_per_gpu(per_token, claim.tokens_per_s_per_gpu) * 1e12
    if implied <= peak.flops:
        return None
    stated = f"the {claim.precision.upper()}" if claim.precision else "its fastest"
    return Finding.at(claim.field,
                      f"is {claim.tokens_per_s_per_gpu:,.0f}, which at {per_token / 1e9:,.4g} GFLOP per token of "
                      f"{card.name} is {implied / 1e12:,.0f} model TFLOP/s per GPU, above {stated} dense peak of a "
                      f"{peak.gpu}, {peak.flops / 1e12:,.0f} TFLOP/s (hardware/gpus.yaml {peak.column}), "
                      f"{implied / peak.flops:,.3g}x it; no GPU runs above its peak: fix the log or the figure, the "
                      "GPU count or the model")


def mfu_beyond_peak(percent: float | None, field: str) -> Finding | None:
    """A published model FLOPs utilisation above 100%: no GPU does more than its peak."""
    if percent is None or percent <= MAX_MFU_PERCENT:
        return None
    return Finding.at(field, f"is {percent:,.6g}%, above {MAX_MFU_PERCENT:g}%, the most a GPU can use of its peak; "
                      "fix the figure or the source")


def memory_beyond_part(memory_gib: float | None, field: str, spec: GpuSpec | None, variant: str) -> Finding | None:
    """A published peak memory per GPU above what the part holds."""
    if memory_gib is None or spec is None:
        return None
    capacity = spec.memory_gb * 1e9 / GIB
    if memory_gib <= capacity:
        return None
    return Finding.at(field, f"is {memory_gib:,.6g} GiB, above the {capacity:,.1f} GiB ({spec.memory_gb} GB) a "
                      f"{variant} holds (hardware/gpus.yaml {variant} memory_gb); fix the figure or the GPU")


@dataclass(frozen=True)
class Microbatch:
    """One microbatch as an entry states it, with the fields that state it."""

    rows: int  # rows (sequences) in one microbatch of one data-parallel rank
    rows_field: str
    data_parallel: float  # data-parallel ranks
    global_batch: int | None  # rows per optimizer step; None where not stated
    tokens_per_gpu: float  # tokens one GPU holds of it (its context-parallel share)
    tokens_field: str
    tp: int
    pp: int


def microbatch_beyond(batch: Microbatch, card: ModelCard | None, spec: GpuSpec | None,
                      variant: str) -> Iterator[Finding]:
    """A microbatch larger than its global batch, or than the GPU can hold: each a finding naming the bound."""
    if batch.global_batch is not None and batch.rows * batch.data_parallel > batch.global_batch:
        yield Finding.at(batch.rows_field, f"is {batch.rows:,} rows, and {batch.rows:,} x {batch.data_parallel:g} "
                         f"data-parallel ranks = {batch.rows * batch.data_parallel:,.0f} rows exceed the global batch "
                         f"of {batch.global_batch:,}; a microbatch is a part of the global batch: fix the microbatch, "
                         "the layout or the batch")
    if card is None or spec is None or not card.architecture.keys() >= {"layers", "hidden_size"}:
        return
    layers = card.layers / batch.pp  # the layers of an average stage: the fullest stage holds at least as many
    least = batch.tokens_per_gpu * int(card.architecture["hidden_size"]) * ACTIVATION_BYTES * layers / batch.tp
    capacity = spec.memory_gb * 1e9
    if least > capacity:
        yield Finding.at(batch.tokens_field, f"is {batch.tokens_per_gpu:,.0f} tokens of one microbatch on one GPU, "
                         f"whose layer inputs alone (tokens x hidden {card.architecture['hidden_size']} x "
                         f"{ACTIVATION_BYTES} bytes x {layers:g} layers per stage / TP {batch.tp}) take "
                         f"{least / GIB:,.0f} GiB, more than the {spec.memory_gb} GB of a {variant} "
                         f"(hardware/gpus.yaml {variant} memory_gb); fix the microbatch or the layout")
