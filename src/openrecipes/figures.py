"""Every derived figure in one place.

The catalog stores inputs (tokens/s, GPUs, active parameters, instance price) and the figures the seeds publish;
these functions recompute each published figure. Nothing else in the project does this arithmetic.
"""

from __future__ import annotations

from collections.abc import Sequence
from statistics import mean, stdev

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


# --- Training FLOPs per token and MFU of a published figure --------------------------------------------------------
# Three ways to count a token's FLOPs, side by side in docs/public-record.md: 6N (FLOPS_PER_PARAM_PER_TOKEN, the
# recipes' MFU); 6 x the matmul parameters plus causal attention (the published record's, close to what
# Megatron-Bridge's "model TFLOP/s" counts); and torchtitan's, which counts attention over the whole square.


def causal_context(seq_length: int, window: int | None = None) -> float:
    """Keys one query attends, averaged over a causal sequence: half the sequence, or the window where it is shorter."""
    half = seq_length / 2
    return half if window is None else min(float(window), half)


def attention_flops_per_token(layers: float, heads: int, qk_head_dim: int, v_head_dim: int, context: float) -> float:
    """Training FLOPs of the score (Q.K) and value (P.V) matmuls per token: 2 FLOPs per multiply-add, forward
    2 x context x heads x (qk + v), three times that with the backward pass."""
    return 3 * 2 * context * heads * (qk_head_dim + v_head_dim) * layers


def matmul_params(active_params: int, vocab: int, hidden: int, untied_embeddings: bool) -> int:
    """Active parameters that cost a matmul per token: the input embedding is a lookup, so an untied one is left
    out (a tied one is the output head's matmul, kept)."""
    return active_params - vocab * hidden if untied_embeddings else active_params


# A frozen weight (LoRA fine-tuning) gets no weight gradient: 2 FLOPs forward and 2 for the input gradient.
FLOPS_PER_FROZEN_PARAM_PER_TOKEN = 4


def training_flops_per_token(matmul_params_count: int, attention_flops: float, frozen_weights: bool = False) -> float:
    """6 FLOPs per matmul parameter (2 forward, 4 backward; 4 when the weights are frozen, as in LoRA, whose small
    adapters this leaves out) plus the attention matmuls."""
    per_param = FLOPS_PER_FROZEN_PARAM_PER_TOKEN if frozen_weights else FLOPS_PER_PARAM_PER_TOKEN
    return per_param * matmul_params_count + attention_flops


def torchtitan_flops_per_token(params_without_embedding: int, layers: int, heads: int, head_dim: int,
                               seq_length: int) -> float:
    """torchtitan's count (get_nparams_and_flops): 6 x the parameters less the embedding + 12 x layers x heads x
    head_dim x seq, attention over the whole square (no causal half)."""
    return FLOPS_PER_PARAM_PER_TOKEN * params_without_embedding + 12 * layers * heads * head_dim * seq_length


def tflops_per_gpu(flops_per_token: float, tokens_per_s_per_gpu: float) -> float:
    """Model TFLOP/s per GPU that a throughput implies."""
    return flops_per_token * tokens_per_s_per_gpu / 1e12


def utilisation(flops_per_token: float, tokens_per_s_per_gpu: float, peak_flops_per_gpu: float) -> float:
    """Model FLOPs utilisation for any FLOPs count: FLOPs per token x tokens/s per GPU / peak FLOP/s of one GPU."""
    return flops_per_token * tokens_per_s_per_gpu / peak_flops_per_gpu
