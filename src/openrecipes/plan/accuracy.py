"""How predictions are compared with measurements: rank agreement of speeds, and memory on the allocator's terms."""

from __future__ import annotations

from scipy.stats import spearmanr


def spearman(xs: list[float], ys: list[float]) -> float:
    """Spearman's rank correlation (ties share their mean rank)."""
    return float(spearmanr(xs, ys).statistic)


def allocator_gib(predicted_total_gib: float, runtime_reserve_gib: float) -> float:
    """The predicted peak without the runtime reserve: what torchtitan's `memory:` (the caching allocator's max
    reserved) and its published Memory(GiB) measure, neither of which holds the CUDA context or NCCL's buffers."""
    return predicted_total_gib - runtime_reserve_gib
