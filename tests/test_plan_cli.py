"""`openrecipes plan` as a user runs it: the --json contract, the ranking, one-line errors with exit 2."""

from __future__ import annotations

import json

import pytest
from conftest import openrecipes

REQUIRED = {"tp", "pp", "cp", "ep", "etp", "dp", "recompute", "offload_fraction", "max_tokens_per_gpu", "fits",
            "reason", "memory_gib", "tokens_per_s_per_gpu", "mfu", "usd_per_million_tokens", "memory_parts",
            "capacity_gib", "headroom_gib", "margin_gib", "peak_fits", "interval"}


def test_json_contract_and_ranking():
    result = openrecipes("plan", "gpt-oss-20b", "--gpu", "H200", "--gpus", "8", "--top", "0", "--json")
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    assert all(set(row) >= REQUIRED for row in rows)
    fits = [row["fits"] for row in rows]
    assert fits == sorted(fits, reverse=True) and any(fits) and not all(fits)
    speeds = [row["tokens_per_s_per_gpu"] for row in rows if row["fits"]]
    assert speeds == sorted(speeds, reverse=True)
    # never a layout inside the memory margin above one that clears it; every prediction with its range
    states = [(r["fits"], r["peak_fits"]) for r in rows]
    assert states == sorted(states, reverse=True) and (False, True) in states
    for r in rows:
        assert r["fits"] == (r["headroom_gib"] >= r["margin_gib"]) and r["peak_fits"] == (r["headroom_gib"] >= 0)
        assert r["interval"]["low"] <= r["tokens_per_s_per_gpu"] <= r["interval"]["high"] and r["interval"]["basis"]
    row = rows[0]
    assert row["recompute"] in ("none", "selective", "full")
    assert abs(sum(row["memory_parts"].values()) - row["memory_gib"]) < 0.05
    # the seeds' measured layout is among the fitting ones
    assert any(r["fits"] and (r["tp"], r["pp"], r["cp"], r["ep"], r["dp"], r["recompute"]) == (1, 1, 1, 4, 8, "none")
               for r in rows)


def test_table_lists_fitting_then_not_fitting():
    # 2 x H100: 840 runnable layouts (whole microbatches), two of which fit
    result = openrecipes("plan", "gpt-oss-20b", "--gpu", "H100", "--gpus", "2", "--top", "3", "--global-batch", "128")
    assert result.returncode == 0, result.stderr
    assert "2 of 840 valid layouts fit" in " ".join(result.stdout.split())
    # a row's first line has its rank; wrapped cells continue on lines with an empty rank cell
    first_lines = [row for row in result.stdout.splitlines() if row.startswith("│") and row.split("│")[1].strip()]
    verdicts = [row.split("│")[-2].strip() for row in first_lines]
    ranked = [row.split("│")[1].strip() for row in first_lines]
    assert verdicts[:2] == ["yes", "yes"] and ranked[:2] == ["1", "2"]
    assert verdicts[2:] and all(v.startswith(("margin:", "no:")) for v in verdicts[2:]) and set(ranked[2:]) == {"-"}


@pytest.mark.parametrize("args, message", [
    (["nope", "--gpu", "H200", "--gpus", "8"], "unknown model 'nope'"),
    (["gpt-oss-20b", "--gpu", "H300", "--gpus", "8"], "unknown GPU type or variant 'H300'"),
    (["gpt-oss-20b", "--gpu", "H200", "--gpus", "12"], "not a whole number of 8-GPU H200 nodes"),
    (["gpt-oss-20b", "--gpu", "H200", "--gpus", "0"], "--gpus 0: give 1 to 8,192 GPUs"),
    (["gpt-oss-20b", "--gpu", "H200", "--gpus", str(2**20 + 8)], f"--gpus {2**20 + 8}: give 1 to 8,192 GPUs"),
    (["qwen3-8b", "--gpu", "H200", "--gpus", "2", "--engine", "megatron", "--float8", "tensorwise"],
     "torchtitan levers, which megatron lacks"),
    (["GLM-5.2-744B-A40B", "--gpu", "H100", "--gpus", "8"], "no layout of GLM-5.2-744B-A40B fits 8 x H100 (megatron)"),
    (["gpt-oss-20b", "--gpu", "H200", "--gpus", "8", "--engine", "jax"], "--engine jax"),
])
def test_bad_input_exits_2_with_one_line(args, message):
    result = openrecipes("plan", *args)
    assert result.returncode == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_the_terminals_table_works_out_only_the_misses_it_shows_and_ranks_as_the_full_plan():
    """`plan` in the terminal shows every layout that fits (or fits but for the margin) and a few misses: the steps
    of the other layouts over the capacity are not worked out, and what is shown is the full ranking's head."""
    from openrecipes.plan.predict import PlanRequest, predict, ranking

    request = PlanRequest("llama-3.1-70b", "H100", 8, 8192, 16, "megatron")
    full = predict(request)
    over = [p for p in full if not p.peak_fits]
    assert len(over) > 10  # most layouts of a 70B model on one host are over the capacity
    shown = ranking(request, misses=3)
    assert shown.valid == len(full) == ranking(request).valid
    head = len(full) - len(over) + 3
    assert [(p.layout, p.tokens_per_s_per_gpu, p.memory) for p in shown.predictions] == \
        [(p.layout, p.tokens_per_s_per_gpu, p.memory) for p in full[:head]]
