"""Each log format into the one step table: steps numbered from 0, step times, losses, timestamps."""

from __future__ import annotations

import re
from datetime import datetime

import pytest
from conftest import REPO

from openrecipes.engines.torchtitan.logs import torchtitan_step
from openrecipes.errors import UserError
from openrecipes.measure.formats import read_log

LOGS = REPO / "tests/fixtures/logs"
TORCHTITAN = LOGS / "torchtitan-0.2.2-qwen3-8b-fsdp2-2xh200.log"


def test_megatron_iteration_n_is_step_n_minus_1():
    table = read_log(LOGS / "megatron-bridge-3-iterations.log")
    assert table.log_format == "megatron"
    assert [s.step for s in table.steps] == [0, 1, 2]
    first = table.steps[0]
    assert first.step_time_s == pytest.approx(15.0342) and first.loss == pytest.approx(2.034512)
    assert first.grad_norm == pytest.approx(4.127) and first.where.endswith(":2")
    assert table.planned_steps == 3
    # "(after 1 iterations) memory (MB) | ... max allocated: 90112.0" is step 0's peak, in GiB
    assert [s.memory_gib for s in table.steps] == [pytest.approx(88.0), None, None]
    assert table.first_timestamp == datetime(2026, 10, 20, 8, 0, 0)
    assert table.last_timestamp == datetime(2026, 10, 20, 8, 1, 40)


def test_slime_joins_step_and_perf_lines_and_counts_from_0():
    table = read_log(LOGS / "slime-gpt-oss-20b-attune-tp1-pp1-ep4.log")
    assert table.log_format == "slime"
    assert [s.step for s in table.steps] == list(range(20))
    first = table.steps[0]
    assert first.step_time_s == pytest.approx(21.4) and first.loss == pytest.approx(1.9)


def test_torchtitan_real_log_step_times_from_timestamps():
    table = read_log(TORCHTITAN)
    assert table.log_format == "torchtitan"
    assert [s.step for s in table.steps] == list(range(25))  # torchtitan's "step: 1" is step 0
    assert table.planned_steps == 25
    by_step = {s.step: s for s in table.steps}
    # step: 2 at 01:04:02,276 after step: 1 at 01:04:00,475
    assert by_step[1].step_time_s == pytest.approx(1.801)
    assert by_step[1].loss == pytest.approx(10.00105) and by_step[1].memory_gib == pytest.approx(103.93)
    # The first step is timed from "Training starts at step 1" (01:03:45,996): it includes compilation.
    assert by_step[0].step_time_s == pytest.approx(14.479)
    # Cross-check against torchtitan's own per-GPU tps: 2 rows x 8,192 tokens per GPU per step.
    assert 2 * 8192 / by_step[1].step_time_s == pytest.approx(9102, rel=2e-3)


def test_torchtitan_keeps_one_rank(tmp_path):
    lines = TORCHTITAN.read_text().splitlines()
    doubled = [line for line in lines for line in (line, line.replace("[rank0]:", "[rank1]:", 1))]
    log = tmp_path / "two-ranks.log"
    log.write_text("\n".join(doubled) + "\n")
    assert [s.step for s in read_log(log).steps] == list(range(25))


def test_torchtitan_without_rank_prefixes_keeps_the_first_line_of_each_step(tmp_path):
    # Every rank printed to one stream with no [rankN]: prefix: each step line appears once per rank, the later
    # copies a little later; the step is timed from the first copy of the step before it.
    lines = [line.replace("[rank0]:", "", 1) for line in TORCHTITAN.read_text().splitlines()]
    late = [re.sub(r"(\d{2}:\d{2}:\d{2},\d{3})", r"\g<1>9", line, count=1) for line in lines]
    log = tmp_path / "every-rank.log"
    log.write_text("\n".join(line for pair in zip(lines, late, strict=True) for line in pair) + "\n")
    table = read_log(log)
    assert [s.step for s in table.steps] == list(range(25))
    assert [s.step_time_s for s in table.steps] == [s.step_time_s for s in read_log(TORCHTITAN).steps]


def test_torchtitan_step_parses_one_line():
    line = ("[rank0]:[titan] 2026-11-30 01:04:02,276 - root - INFO - step:  2  loss: 10.00105  grad_norm:  3.1  "
            "memory: 103.93GiB(74.34%)  tps: 9,102")
    step = torchtitan_step(line, "x.log:7", datetime(2026, 11, 30, 1, 4, 0, 475000))
    assert (step.step, step.loss, step.memory_gib, step.where) == (1, 10.00105, 103.93, "x.log:7")
    assert step.step_time_s == pytest.approx(1.801)
    assert torchtitan_step("[rank0]: Training starts at step 1", "x.log:1", None) is None


def test_openrecipes_jsonl():
    table = read_log(LOGS / "openrecipes-3-steps.jsonl")
    assert table.log_format == "jsonl"
    assert [(s.step, s.step_time_s, s.loss) for s in table.steps] == [(0, 14.2, 2.5), (1, 12.1, 2.25), (2, 11.9, 2.0)]
    assert table.last_timestamp == datetime(2026, 11, 2, 10, 0, 38)


@pytest.mark.parametrize("text, message", [
    ("hello\nno steps here\n", "no training step lines of a known format"),
    ('{"step": 0, "loss": 1.0}\n{"step": 1, "loss": \n', "not a JSON object"),
    ('{"step": 0, "loss": "high"}\n', "'loss' must be a number"),
    ("step 3: {'train/loss': 1.0, 'train/grad\n", "cut off"),
    (" iteration 1/ 3 | elapsed time per iteration (ms): 10.0 | lm loss: 2.0 |\n"
     " iteration 2/ 3 | elapsed time per iteration (ms): 10.0 | lm lo\n", "has no 'lm loss'"),
    (" iteration 1/ 3 | elapsed time per iteration (ms): 10.0 | lm loss: 2.0 |\nstep 0: {'train/loss': 1.0}\n",
     "several formats"),
])
def test_bad_logs_name_the_problem(tmp_path, text, message):
    log = tmp_path / "bad.log"
    log.write_text(text)
    with pytest.raises(UserError, match=message):
        read_log(log)


def test_missing_file_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="cannot read"):
        read_log(tmp_path / "absent.log")


def test_slime_numpy2_scalars_read_as_their_values():
    """Under numpy 2 slime prints metrics as `np.float64(21.4)`; they must read as the same figures."""
    plain = read_log(LOGS / "slime-gpt-oss-20b-attune-tp1-pp1-ep4.log")
    numpy2 = read_log(LOGS / "slime-numpy2-gpt-oss-20b-attune-tp1-pp1-ep4.log")
    assert "np.float64(" in (LOGS / "slime-numpy2-gpt-oss-20b-attune-tp1-pp1-ep4.log").read_text()
    assert [(s.step, s.step_time_s, s.loss, s.grad_norm) for s in numpy2.steps] == \
        [(s.step, s.step_time_s, s.loss, s.grad_norm) for s in plain.steps]
    assert all(s.step_time_s is not None for s in numpy2.steps)
