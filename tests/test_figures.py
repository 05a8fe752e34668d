"""figures.py reproduces every derived figure the seed pages publish."""

from __future__ import annotations

import pytest

from openrecipes import figures
from openrecipes.catalog.hardware import load_reference_tables

TABLES = load_reference_tables()


def usd(instance, tps):
    row = TABLES.instances[instance]
    return figures.usd_per_million_tokens(figures.usd_per_gpu_hour(row.usd_per_hour, row.gpus), tps)


@pytest.mark.parametrize(("instance", "tps", "published"), [
    ("AWS p6-b200.48xlarge", 146.8, "26.95"), ("AWS p6-b200.48xlarge", 146.68, "26.97"),
    ("AWS p6-b200.48xlarge", 136.48, "28.99"), ("AWS p5en.48xlarge", 10483.91, "0.21"),
    ("AWS p5en.48xlarge", 9448.16, "0.23"),
    # The "on other GPUs" cards: consistent with the same AWS prices at their (rounded) published tokens/s.
    ("AWS p5en.48xlarge", 161.8, "13.58"), ("AWS p5.48xlarge", 7496.7, "0.25"),
    ("AWS p6-b200.48xlarge", 14536.3, "0.27"),
])
def test_usd_per_million_tokens_reproduces_the_seeds(instance, tps, published):
    assert figures.within_published_rounding(usd(instance, tps), published)


@pytest.mark.parametrize(("n", "tps", "gpu", "published"), [
    (40297758720, 146.8, "B200", "0.0158"), (40297758720, 136.48, "B200", "0.0147"),
    (3607142400, 10483.91, "H200", "0.2294"), (3607142400, 9448.16, "H200", "0.2068"),
])
def test_mfu_reproduces_the_seeds(n, tps, gpu, published):
    assert figures.within_published_rounding(figures.mfu(n, tps, TABLES.gpus[gpu].peak_bf16_flops), published)


def test_window_rows_and_cv():
    assert figures.window_tokens(5, 19, 128, 8192) == 15_728_640
    assert figures.window_tokens(4, 13, 128, 8192) == 10_485_760
    assert figures.rows_per_microbatch(16384, 4, 8192) == 8
    assert figures.rows_per_microbatch(12288, 4, 8192) == 6
    assert figures.gpu_hours(8, 3600 * 0.5) == 4.0
    assert figures.step_time_cv_percent([1.0, 1.0, 1.0]) == 0.0
    assert figures.step_time_cv_percent([9.0, 11.0]) == pytest.approx(14.142135, rel=1e-6)
    with pytest.raises(ValueError):
        figures.step_time_cv_percent([1.0])


def test_published_rounding_tolerance_follows_the_written_digits():
    assert figures.within_published_rounding(26.948, "26.95")
    assert not figures.within_published_rounding(26.9551, "26.95")
    assert figures.within_published_rounding(7.44e-6, "7.4e-06")
    assert not figures.within_published_rounding(7.5e-6, "7.4e-06")
