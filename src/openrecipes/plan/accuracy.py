"""How predictions are compared with measurements: rank agreement of speeds, and memory on the allocator's terms."""

from __future__ import annotations


def spearman(xs: list[float], ys: list[float]) -> float:
    """Spearman's rank correlation: Pearson's over average ranks (ties share their mean rank)."""
    def ranks(values: list[float]) -> list[float]:
        order = sorted(values)
        return [order.index(v) + (order.count(v) + 1) / 2 for v in values]
    rx, ry = ranks(xs), ranks(ys)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry, strict=True))
    return cov / (sum((a - mx) ** 2 for a in rx) * sum((b - my) ** 2 for b in ry)) ** 0.5


def allocator_gib(predicted_total_gib: float, runtime_reserve_gib: float) -> float:
    """The predicted peak without the runtime reserve: what torchtitan's `memory:` (the caching allocator's max
    reserved) and its published Memory(GiB) measure, neither of which holds the CUDA context or NCCL's buffers."""
    return predicted_total_gib - runtime_reserve_gib
