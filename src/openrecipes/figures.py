"""Every derived figure in one place.

The catalog stores inputs (tokens/s, GPUs, active parameters, instance price) and the figures the seeds publish;
these functions recompute each published figure. Nothing else in the project does this arithmetic.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from statistics import mean, stdev
from typing import Any

SECONDS_PER_HOUR = 3600.0
# A dense transformer's training step costs 6 FLOPs per active parameter per token (2 forward, 4 backward).
FLOPS_PER_PARAM_PER_TOKEN = 6


def mfu(active_params: int, tokens_per_s_per_gpu: float, peak_flops_per_gpu: float) -> float:
    """Model FLOPs utilisation: 6 * N_active * tokens/s/GPU / peak dense BF16 FLOP/s of one GPU."""
    return FLOPS_PER_PARAM_PER_TOKEN * active_params * tokens_per_s_per_gpu / peak_flops_per_gpu


def usd_per_gpu_hour(instance_usd_per_hour: float, gpus_per_instance: int) -> float:
    return instance_usd_per_hour / gpus_per_instance


def usd_per_million_tokens(usd_per_gpu_hour: float, tokens_per_s_per_gpu: float) -> float:
    """$ per 1M training tokens: $/GPU-hour / (tokens/s/GPU * 3600) * 1e6."""
    return usd_per_gpu_hour / (tokens_per_s_per_gpu * SECONDS_PER_HOUR) * 1e6


def time_to_train_hours(tokens: float, tokens_per_s_per_gpu: float, gpus: int) -> float:
    """Wall time to train `tokens` at a layout's speed: tokens / (tokens/s/GPU * GPUs) / 3600."""
    return tokens / (tokens_per_s_per_gpu * gpus) / 3600


def cost_to_train_usd(tokens: float, tokens_per_s_per_gpu: float, usd_per_gpu_hour_: float) -> float:
    """$ to train `tokens`: GPU-hours (every GPU for the wall time) * $/GPU-hour, i.e. tokens / 1M * $ per 1M."""
    return tokens / 1e6 * usd_per_million_tokens(usd_per_gpu_hour_, tokens_per_s_per_gpu)


def window_tokens(first_step: int, last_step: int, global_batch: int, row_tokens: int) -> int:
    """Tokens trained in a window of steps; both ends are included."""
    return (last_step - first_step + 1) * global_batch * row_tokens


def rows_per_microbatch(max_tokens_per_gpu: int, cp: int, row_tokens: int) -> float:
    """Rows in one microbatch: a CP group of `cp` GPUs shares each row, each GPU holding max_tokens_per_gpu."""
    return max_tokens_per_gpu * cp / row_tokens


def gpu_hours(gpus: int, seconds: float) -> float:
    return gpus * seconds / SECONDS_PER_HOUR


def tokens_per_s_per_gpu(tokens: int, seconds: float, gpus: int) -> float:
    """Throughput over a window: its tokens / the sum of its step times / GPUs."""
    return tokens / seconds / gpus


def step_seconds(tokens_per_step: int, gpus: int, tokens_per_s_per_gpu: float) -> float:
    """The step time a throughput implies: the inverse of tokens_per_s_per_gpu for one step."""
    return tokens_per_step / gpus / tokens_per_s_per_gpu


def step_time_cv_percent(step_times: Sequence[float]) -> float:
    """Coefficient of variation of step times: sample standard deviation / mean, in percent."""
    if len(step_times) < 2:
        raise ValueError("the step-time CV needs at least two steps")
    return stdev(step_times) / mean(step_times) * 100.0


def mean_half_width(cv_percent: float, steps: int, sigmas: float) -> float:
    """Relative half-width of the confidence interval on a mean over `steps` step times: sigmas x CV / sqrt(steps)."""
    return sigmas * (cv_percent / 100) / math.sqrt(steps)


def data_parallel_size(gpus: int, tp: int, pp: int, cp: int) -> float:
    return gpus / (tp * pp * cp)


def within_published_rounding(recomputed: float, published_text: str) -> bool:
    """True when `recomputed` rounds to the published figure at the precision it was published with.

    `published_text` is the figure as written in the YAML (e.g. '26.95', '0.0158', '7.4e-06'): its last
    digit sets the tolerance to half a unit of that digit.
    """
    return abs(recomputed - float(published_text)) <= published_half_unit(published_text) * (1 + 1e-9)


def published_half_unit(published_text: str) -> float:
    text = published_text.strip().lower()
    mantissa, _, exponent = text.partition("e")
    decimals = len(mantissa.partition(".")[2])
    return 0.5 * 10.0 ** (-decimals + (int(exponent) if exponent else 0))


# --- Training FLOPs per token --------------------------------------------------------------------------------------
# Two ways to count a token's FLOPs, side by side in docs/public-record.md: 6N (FLOPS_PER_PARAM_PER_TOKEN, the
# recipes' MFU and the planner's compute), and 6 x the matmul parameters plus causal attention (the published
# record's, close to what Megatron-Bridge's "model TFLOP/s" counts). Both add attention_flops_per_token.


def attention_flops_per_token(layers: int, score_width: int, seq_length: int, window: int | None = None,
                              windowed_fraction: float = 0.0, sparse_topk: int | None = None) -> float:
    """Training FLOPs of the score (Q.K) and value (P.V) matmuls per token over all layers: 2 FLOPs per multiply-add,
    forward 2 x context x score_width (heads x (qk + v head dims)), three times that with the backward pass.

    A causal query attends half the sequence on average; on the windowed fraction of the layers at most `window`
    keys (the token itself included), and with sparse attention (DSA) at most `sparse_topk` keys."""
    full = seq_length / 2
    context = full if sparse_topk is None else min(full, sparse_topk)
    windowed = min(full, window) if window else full
    mean_context = (1 - windowed_fraction) * context + windowed_fraction * windowed
    return 3 * 2 * mean_context * score_width * layers


def attention_score_width(arch: Mapping[str, Any]) -> int:
    """heads x (qk + v head dims) of a model card's architecture: multi-latent attention scores with its no-position
    and rotary parts; grouped-query attention with kv_channels (hidden / heads where the card gives none)."""
    heads = int(arch["attention_heads"])
    if "qk_head_dim" in arch:
        return heads * (int(arch["qk_head_dim"]) + int(arch.get("qk_pos_emb_head_dim", 0)) + int(arch["v_head_dim"]))
    return heads * 2 * int(arch.get("kv_channels") or int(arch["hidden_size"]) // heads)


def attention_window(arch: Mapping[str, Any]) -> tuple[int | None, float]:
    """A card's sliding window in keys (Megatron's --window-size W attends W past tokens plus the token itself) and
    the fraction of layers it is on: all but every window_attn_skip_freq-th; (None, 0.0) without a window."""
    window, skip = arch.get("window_size"), arch.get("window_attn_skip_freq")
    if window is None:
        return None, 0.0
    return int(window) + 1, (1 - 1 / int(skip)) if skip else 1.0


def matmul_params(active_params: int, vocab: int, hidden: int, untied_embeddings: bool) -> int:
    """Active parameters that cost a matmul per token: the input embedding is a lookup, so an untied one is left
    out (a tied one is the output head's matmul, kept)."""
    return active_params - vocab * hidden if untied_embeddings else active_params


# A frozen weight (LoRA fine-tuning) gets no weight gradient: 2 FLOPs forward and 2 for the input gradient.
FLOPS_PER_FROZEN_PARAM_PER_TOKEN = 4


def training_flops_per_token(params: int, attention_flops: float, frozen_weights: bool = False) -> float:
    """6 FLOPs per parameter (2 forward, 4 backward; 4 when the weights are frozen, as in LoRA, whose small adapters
    this leaves out) plus the attention matmuls."""
    per_param = FLOPS_PER_FROZEN_PARAM_PER_TOKEN if frozen_weights else FLOPS_PER_PARAM_PER_TOKEN
    return per_param * params + attention_flops


def tflops_per_gpu(flops_per_token: float, tokens_per_s_per_gpu: float) -> float:
    """Model TFLOP/s per GPU that a throughput implies."""
    return flops_per_token * tokens_per_s_per_gpu / 1e12


def utilisation(flops_per_token: float, tokens_per_s_per_gpu: float, peak_flops_per_gpu: float) -> float:
    """Model FLOPs utilisation for any FLOPs count: FLOPs per token x tokens/s per GPU / peak FLOP/s of one GPU."""
    return flops_per_token * tokens_per_s_per_gpu / peak_flops_per_gpu
