"""`plan emit` writes what it promises: a recipe at any row length and global batch, with the rows of that length and
the command that builds them; every field its own or null (no other recipe's run date, CV, reproductions or
network); the validator holds planned and measured recipes to that."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
import yaml
from conftest import openrecipes

from openrecipes.catalog.model import Recipe


def _emit(tmp_path: Path, name: str, *options: str) -> Recipe:
    out = tmp_path / f"{name}.yaml"
    done = openrecipes("plan", "emit", *options, "--rank", "1", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert openrecipes("validate", str(out)).returncode == 0
    dry = openrecipes("run", str(out), "--dry-run")
    assert dry.returncode == 0, dry.stderr
    recipe = Recipe.model_validate(yaml.safe_load(out.read_text()))
    assert recipe.run.strip() in dry.stdout or "torchrun" in dry.stdout
    return recipe


@pytest.mark.parametrize("row_tokens", [4096, 16384])
def test_emit_at_another_row_length_names_the_rows_of_that_length_and_the_command_that_builds_them(
        tmp_path, row_tokens):
    recipe = _emit(tmp_path, f"rows{row_tokens}", "qwen3-8b", "--gpu", "H200", "--gpus", "2",
                   "--row-tokens", str(row_tokens), "--global-batch", "16")
    dataset, build = recipe.workload.dataset, recipe.workload.dataset.build
    assert recipe.workload.row_tokens == build.row_tokens == row_tokens
    assert f"--training.seq_len {row_tokens}" in recipe.run
    assert build.rows == 16 * recipe.result.steps_per_run  # a global batch a step, for every step of the run
    assert build.name == f"qwen3-chatterbot-demo-fixed{row_tokens}"  # the name `rows demo` gives that build
    # only a built dataset knows its digests, size and supervised share
    assert dataset.rows_sha256 is None and build.parquet_sha256 is None and build.parquet_bytes is None
    assert build.supervised_token_ratio is None
    command = shlex.split(build.builder)
    assert command[:3] == ["openrecipes", "rows", "demo"]
    out = command[command.index("--out") + 1]
    assert command[command.index("--row-tokens") + 1] == str(row_tokens)
    assert command[command.index("--rows") + 1] == str(build.rows)
    assert f"--training.dataset_path {out}/rows.parquet" in recipe.run  # the run reads the rows that command builds
    assert f"`{build.builder}`" in recipe.notes


def test_a_larger_global_batch_builds_enough_rows_and_the_reference_workload_keeps_the_bases_rows(tmp_path):
    big = _emit(tmp_path, "gb64", "qwen3-8b", "--gpu", "H200", "--gpus", "2", "--global-batch", "64")
    assert big.workload.global_batch == 64 and big.workload.dataset.build.rows == 64 * big.result.steps_per_run
    assert big.workload.dataset.rows_sha256 is None
    same = _emit(tmp_path, "gb16", "qwen3-8b", "--gpu", "H200", "--gpus", "2", "--global-batch", "16")
    assert same.workload.dataset.rows_sha256 is not None  # the base's rows, built and digested, are these rows
    assert "--training.dataset_path .data/qwen3-rows/rows.parquet" in same.run


def test_a_planned_recipe_states_no_measured_fact_and_its_own_network(tmp_path):
    recipe = _emit(tmp_path, "x16", "qwen3-8b", "--gpu", "H200", "--gpus", "16")
    assert recipe.result.measured is None and recipe.result.step_time_cv_percent is None
    assert recipe.reproductions == []
    # two 8-GPU nodes: the H200's links from hardware/gpus.yaml, not the 2-GPU base's "one node, 2 x H200"
    assert recipe.stack.network == ("2 nodes of 8 x H200: NVLink 4, 900 GB/s within a node, InfiniBand NDR 400 Gb/s "
                                    "per GPU between nodes")
    shown = openrecipes("show", str(tmp_path / "x16.yaml"))
    assert shown.returncode == 0 and "not run (planned)" in shown.stdout


def test_validate_holds_planned_recipes_to_no_measured_facts_and_measured_ones_to_all(tmp_path):
    out = tmp_path / "planned.yaml"
    assert openrecipes("plan", "emit", "qwen3-8b", "--gpu", "H200", "--gpus", "2", "--rank", "1",
                       "--out", str(out)).returncode == 0
    text = out.read_text()
    dated = tmp_path / "dated.yaml"
    dated.write_text(text.replace("  measured: null\n", "  measured: '2026-11-30'\n"))
    refused = openrecipes("validate", str(dated))
    assert refused.returncode == 1 and "result.measured" in refused.stdout + refused.stderr
    measured = tmp_path / "measured.yaml"
    measured.write_text(text.replace("status: planned", "status: measured"))
    refused = openrecipes("validate", str(measured))
    assert refused.returncode == 1 and "result.step_time_cv_percent" in refused.stdout + refused.stderr


def _flag(run: str, flag: str) -> str:
    words = run.split()
    return words[words.index(flag) + 1]


@pytest.mark.parametrize("grad_reduce_bf16", [True, False])
def test_a_megatron_layout_emits_a_slime_recipe_whose_command_carries_its_layout(tmp_path, grad_reduce_bf16):
    options = ["gpt-oss-20b", "--gpu", "H200", "--gpus", "8", "--engine", "megatron"]
    recipe = _emit(tmp_path, "megatron", *options, *(["--grad-reduce-bf16"] if grad_reduce_bf16 else []))
    lay = recipe.layout
    assert recipe.status == "planned" and recipe.author.name == "OpenRecipes"  # not the base's measuring author
    assert recipe.result.measured is None and recipe.reproductions == []
    for flag, value in (("--tensor-model-parallel-size", lay.tp), ("--pipeline-model-parallel-size", lay.pp),
                        ("--context-parallel-size", lay.cp), ("--expert-model-parallel-size", lay.ep),
                        ("--max-tokens-per-gpu", lay.max_tokens_per_gpu), ("--global-batch-size", 128)):
        assert _flag(recipe.run, flag) == str(value), flag
    # the plan's gradient buffers are the command's: Megatron's 2-byte reduction exactly when planned with it
    assert ("--grad-reduce-in-bf16" in recipe.run.split()) is grad_reduce_bf16
    assert "run --dry-run" in recipe.notes


def test_a_megatron_plan_on_more_nodes_rewrites_the_nodes_and_drops_what_the_layout_does_not_use(tmp_path):
    recipe = _emit(tmp_path, "glm", "GLM-5.2-744B-A40B", "--gpu", "H200", "--gpus", "128", "--engine", "megatron")
    assert _flag(recipe.run, "--actor-num-nodes") == "16" and _flag(recipe.run, "--actor-num-gpus-per-node") == "8"
    assert recipe.stack.network.startswith("16 nodes of 8 x H200")
    if recipe.layout.recompute is None:
        assert "--recompute-granularity" not in recipe.run
    if recipe.layout.offload is None:
        assert "--optimizer-cpu-offload" not in recipe.run.split()
    # no line left holding only its continuation
    assert all(line.strip() != "\\" for line in recipe.run.splitlines())


def test_the_megatron_command_writer_drops_unused_flags_cleanly_and_adds_no_default():
    from openrecipes.catalog.store import load_recipe
    from openrecipes.engines.megatron.runner import megatron_run

    base = load_recipe(Path(__file__).resolve().parents[1] / "recipes/glm-5.2-744b-a40b/b200/attune-tp4-pp2-cp8.yaml")
    layout = base.layout.model_copy(update=dict(recompute=None, offload=None, layer_split=None, cp=4, dp=2))
    run = megatron_run(base.model_copy(update={"layout": layout}), base.run, grad_reduce_bf16=False)
    words = run.split()
    for gone in ("--recompute-granularity", "--recompute-method", "--recompute-num-layers", "--optimizer-cpu-offload",
                 "--optimizer-offload-fraction", "--overlap-cpu-optimizer-d2h-h2d",
                 "--decoder-first-pipeline-num-layers", "--decoder-last-pipeline-num-layers"):
        assert gone not in words, gone
    assert _flag(run, "--context-parallel-size") == "4" and "--use-precision-aware-optimizer" in words
    assert "--virtual-pipeline-model-parallel-size" not in words  # VP 1 is Megatron's default: not added
    assert all(line.strip() != "\\" for line in run.splitlines())
    assert megatron_run(base, base.run, grad_reduce_bf16=False) == base.run  # its own fields: the same command
