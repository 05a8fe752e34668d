"""The physical plausibility rule: no entry may claim more than its GPU can do.

A recipe or a published entry states tokens/s per GPU; times the FLOPs one token costs (counted from the model card,
figures.py) that is model FLOP/s per GPU, which cannot exceed the dense peak of the GPU at the precision its matmuls
ran in (hardware/gpus.yaml, looked up by hardware.entry_peak). The count is a lower bound of the work done (no
recompute, no embedding lookup, the causal half of attention), so an entry refused here claims the impossible:
a mistyped figure, the wrong GPU count or the wrong model. A precision whose peak the part lacks (NVFP4 or MXFP8 on
a Hopper, FP8 on an A100) is refused for the same reason: those matmuls cannot run there.
"""

from __future__ import annotations

from dataclasses import dataclass

from openrecipes import figures
from openrecipes.catalog.hardware import ModelCard, ReferenceTables, entry_peak
from openrecipes.catalog.model import Gpu, SummaryGpu
from openrecipes.verdict import Finding

# What flops_per_token reads from every card (head widths come from kv_channels, the MLA fields or hidden / heads).
ATTENTION_FIELDS = frozenset({"layers", "hidden_size", "attention_heads", "padded_vocab_size"})


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
    return Finding.at("result.tokens_per_s_per_gpu",
                      f"is {claim.tokens_per_s_per_gpu:,.6g}, which at {per_token / 1e9:,.4g} GFLOP per token of "
                      f"{card.name} is {implied / 1e12:,.0f} model TFLOP/s per GPU, above {stated} dense peak of a "
                      f"{peak.gpu}, {peak.flops / 1e12:,.0f} TFLOP/s (hardware/gpus.yaml {peak.column}); no GPU runs "
                      "above its peak: check the figure, the GPU count and the model")
