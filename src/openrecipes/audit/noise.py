"""The noise band of a reproduction: how far an honest re-run of a recipe may land from its published tokens/s.

band (percent) = RUN_TO_RUN.spread_percent + RUN_TO_RUN.step_time_sigmas * the recipe's step-time CV (percent).
Named data with reasons, as thresholds.py holds the checks' thresholds; docs/trust.md explains it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RunToRunNoise:
    """spread_percent: the largest difference we measured between two runs of one configuration on one kind of
    machine. benchmarks/RESULTS.md records the repeats: the Qwen3-8B first-pass repeats +0.8% and +1.2%, the
    Qwen3-1.7B sweep's repeats of four 20-step recipes +1.2% to +4.0% (the largest: torchtitan stock, eager),
    tune's 10-step runs against the sweep's -1.4% to +1.1%, the independent 2 x H200 re-runs of both Qwen3-8B
    recipes +1.9% and +2.7%. A run-to-run shift comes from the machine (clocks, thermals, NVLink state, the
    compiler's autotuning), which the step-time CV of one run does not see, hence a floor.

    step_time_sigmas: a recipe whose steps vary within a run (a high step-time CV: MoE routing, pipeline
    bubbles, a noisy host) also varies between runs; two step-time CVs widen the band for such recipes (the
    compiled Qwen3 recipes' CV of 0.1-0.4% adds under 1%)."""

    spread_percent: float = 4.0
    step_time_sigmas: float = 2.0


RUN_TO_RUN = RunToRunNoise()


def noise_band_percent(step_time_cv_percent: float, noise: RunToRunNoise = RUN_TO_RUN) -> float:
    """The band around a recipe's published tokens/s per GPU, in percent, rounded to the 0.01 it is written with."""
    return round(noise.spread_percent + noise.step_time_sigmas * step_time_cv_percent, 2)


def delta_percent(reproduced: float, published: float) -> float:
    """Reproduced over published, minus 1, in percent, rounded to 0.01."""
    return round((reproduced / published - 1) * 100, 2)
