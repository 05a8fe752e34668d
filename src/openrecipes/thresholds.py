"""Every threshold the checks use, as named data in one place (no magic numbers in the checking code).

Plain Python with no third-party imports, so the component tests can run where only torch is installed.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LossBand:
    """Pointwise tolerance for reference losses above `above` (the first band that matches applies)."""

    above: float
    relative_tolerance: float


@dataclass(frozen=True)
class ConvergenceThresholds:
    """Megatron-Bridge's `validate_convergence` (scripts/performance/utils/evaluate.py) with the values its
    performance pipeline passes: the first 20 % of points skipped and a 5 % final-loss tolerance (its default 3 %
    is for long runs; the seeds' 20-step checks used the pipeline's)."""

    skip_first_fraction: float = 0.20
    min_correlation: float = 0.95  # Pearson correlation of the two curves
    # A loss of 10 moves more between two honest runs than a loss of 0.3; the tolerance tightens as loss falls.
    loss_bands: tuple[LossBand, ...] = (
        LossBand(above=2.0, relative_tolerance=0.10),
        LossBand(above=0.5, relative_tolerance=0.05),
        LossBand(above=float("-inf"), relative_tolerance=0.02),
    )
    max_pointwise_failure_ratio: float = 0.10
    max_final_loss_difference: float = 0.05  # relative to the reference's final loss
    outlier_sigmas: float = 3.0  # a residual further than this many standard deviations from the mean residual
    max_outlier_ratio: float = 0.10
    min_points: int = 3  # fewer compared points cannot support a correlation

    def tolerance_for(self, reference_loss: float) -> float:
        return next(band.relative_tolerance for band in self.loss_bands if reference_loss > band.above)


@dataclass(frozen=True)
class PlacementOnlyTolerance:
    """The strict verdict for a change of placement arguments only: the same arithmetic in another layout must
    give the same loss at every step up to reduction-order noise, |candidate - reference| <= absolute +
    relative * |reference|."""

    absolute: float = 1e-6
    relative: float = 0.01


@dataclass(frozen=True)
class OptimizerOffloadBounds:
    """Worst-tensor relative L2 error of the parameter update against an FP64 reference. The seeds' component
    test measured 8.0e-7 after one step and 7.7e-5 after three at these bounds; a BF16 master copy, a wrong
    beta2 or a missing bias correction lands orders of magnitude above them."""

    after_one_step: float = 1.0e-3
    after_three_steps: float = 1.10e-3


@dataclass(frozen=True)
class PublishedFlopsTolerance:
    """How far a published model TFLOP/s per GPU may sit from tokens/s x our FLOPs per token (figures.py: 6 x the
    matmul parameters + causal attention) before it is shown as a finding. Megatron-Bridge counts each model with
    its own formula (routers, norms, multi-token prediction, sliding windows counted or not), so an honest figure
    lands within a few percent of ours: over the imported record most rows agree within 4 %. Beyond `agree` the
    entry stays valid and the disagreement is reported; beyond `absurd` (a factor of 2 either way: a wrong model,
    a per-node figure or a typo) the entry is invalid."""

    agree: float = 0.10  # |published / ours - 1|
    absurd: float = 2.0  # published / ours outside [1/absurd, absurd]


PIPELINE_CONVERGENCE = ConvergenceThresholds()
PLACEMENT_ONLY = PlacementOnlyTolerance()
OPTIMIZER_OFFLOAD = OptimizerOffloadBounds()
PUBLISHED_FLOPS = PublishedFlopsTolerance()


# The largest training log or loss curve `measure`, `reproduce` and `record` accept. Logs are read as streams, so
# memory does not grow with it; it bounds the time a read takes. A 2 GiB Megatron log of 200,000 steps, mostly NCCL
# lines, is measured (benchmarks/log_memory.py); a file over twice that is an archive or a dump, not one run's log.
MAX_LOG_BYTES = 4 * 2**30
