"""The configuration check on the seeds' commands: placement only, needs a component test, numerics, unclassified."""

from __future__ import annotations

import pytest
from conftest import GLM_16K, GPTOSS_1, REPO

from openrecipes.catalog.command import parse_run
from openrecipes.catalog.store import load_recipe
from openrecipes.errors import UserError
from openrecipes.verify.config import check_config, compare_runs, load_rules, read_run

GPTOSS_2 = REPO / "recipes/gpt-oss-20b/h200/attune-tp1-pp2-ep4.yaml"
GPTOSS_2_REFERENCE = REPO / "tests/fixtures/config/gpt-oss-20b-megatron-bridge-reference.sh"
GLM_12K = REPO / "recipes/glm-5.2-744b-a40b/b200/attune-tp4-pp2-cp4-mt12k.yaml"
SEED_RECIPES = sorted(p for p in (REPO / "recipes").rglob("attune-*.yaml"))


def _script(tmp_path, text, name="run.sh"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_gpt_oss_2_against_its_reference_is_placement_only():
    verdict = check_config(GPTOSS_2, GPTOSS_2_REFERENCE)
    assert verdict["result"] == "pass" and verdict["placement_only"]
    assert [(c["argument"], c["reference"], c["candidate"]) for c in verdict["changes"]] == [
        ("--expert-model-parallel-size", "8", "4"),
        ("--pipeline-model-parallel-size", "1", "2"),
        ("--recompute-granularity", "full", None),
        ("--recompute-method", "uniform", None),
        ("--recompute-num-layers", "1", None),
    ]
    assert verdict["reasons"] == [] and verdict["component_tests"] == []


def test_gpt_oss_1_and_2_differ_in_placement_only():
    verdict = check_config(GPTOSS_2, GPTOSS_1)
    assert verdict["result"] == "pass" and verdict["placement_only"]
    assert [c["argument"] for c in verdict["changes"]] == ["--pipeline-model-parallel-size"]


def test_glm_run_length_change_is_numerics():
    verdict = check_config(GLM_12K, GLM_16K)
    assert verdict["result"] == "fail" and not verdict["placement_only"]
    assert {c["argument"]: c["class"] for c in verdict["changes"]} == {
        "--max-tokens-per-gpu": "placement", "--num-rollout": "numerics"}
    assert verdict["reasons"] == ["--num-rollout changes the numerics (20 -> 14): steps in the run; sets the LR "
                                  "schedule's horizon when no decay length is given"]


def test_adding_optimizer_offload_needs_its_component_test(tmp_path):
    run = load_recipe(GLM_16K).run
    without = run.replace("--optimizer-cpu-offload --optimizer-offload-fraction 0.9 --overlap-cpu-optimizer-d2h-h2d "
                          "--use-precision-aware-optimizer ", "")
    assert without != run
    verdict = check_config(GLM_16K, _script(tmp_path, without))
    assert verdict["result"] == "needs component test" and verdict["component_tests"] == ["optimizer-offload"]
    assert len(verdict["changes"]) == 4 and all("check component optimizer-offload" in r for r in verdict["reasons"])


def test_unclassified_argument_fails_and_says_where_to_class_it(tmp_path):
    run = load_recipe(GPTOSS_1).run
    verdict = check_config(_script(tmp_path, run.replace("--seed 5678", "--seed 5678 --brand-new-knob 3")), GPTOSS_1)
    assert verdict["result"] == "fail"
    [change] = verdict["changes"]
    assert change["argument"] == "--brand-new-knob" and change["class"] is None
    assert "add it to rules/argument-classes.yaml" in verdict["reasons"][0]


def test_environment_changes_are_classed(tmp_path):
    run = load_recipe(GPTOSS_1).run
    verdict = check_config(_script(tmp_path, run.replace("NCCL_NVLS_ENABLE=0", "NCCL_NVLS_ENABLE=1")), GPTOSS_1)
    assert verdict["result"] == "pass" and verdict["changes"][0]["argument"] == "NCCL_NVLS_ENABLE"
    verdict = check_config(_script(tmp_path, run.replace("PARITY_PROBE=0", "PARITY_PROBE=0 MY_FLAG=1")), GPTOSS_1)
    assert verdict["result"] == "fail" and verdict["changes"][0]["class"] is None


def test_torchtitan_sections_and_execution_fingerprint():
    reference = parse_run("torchrun --nproc_per_node 8 -m torchtitan.train --parallelism.data_parallel_shard_degree 8 "
                          "--training.local_batch_size 2 --optimizer.lr 3e-4 --compile.enable")
    candidate = parse_run("torchrun --nproc_per_node 8 -m torchtitan.train --parallelism.data_parallel_shard_degree 4 "
                          "--parallelism.tensor_parallel_degree 2 --training.local_batch_size 4 --optimizer.lr 3e-4 "
                          "--optimizer.implementation fused")
    verdict = compare_runs(reference, candidate, load_rules())
    classes = {c["argument"]: c["class"] for c in verdict["changes"]}
    assert classes == {
        "--compile.enable": "placement",
        "--optimizer.implementation": "placement",
        "--parallelism.data_parallel_shard_degree": "placement",
        "--parallelism.tensor_parallel_degree": "placement",
        "--training.local_batch_size": "execution_fingerprint",
    }
    assert verdict["result"] == "pass" and not verdict["placement_only"]
    assert "step-for-step parity is not claimed" in verdict["reasons"][0]
    changed_lr = parse_run("torchrun --nproc_per_node 8 -m torchtitan.train --optimizer.lr 1e-4")
    assert compare_runs(parse_run("torchrun --nproc_per_node 8 -m torchtitan.train --optimizer.lr 3e-4"), changed_lr,
                        load_rules())["result"] == "fail"


@pytest.mark.parametrize("recipe", SEED_RECIPES, ids=lambda p: p.stem)
def test_every_seed_argument_and_export_is_classed(recipe):
    rules, run = load_rules(), read_run(recipe)
    assert [flag for flag in run.flags if rules.of_argument(flag) is None] == []
    assert [name for name in run.exports if name not in rules.environment] == []


def test_bad_rules_and_scripts_are_user_errors(tmp_path):
    rules = _script(tmp_path, "arguments:\n  --x: {class: maybe, why: because}\n", "rules.yaml")
    with pytest.raises(UserError, match="needs 'class'"):
        load_rules(rules)
    with pytest.raises(UserError, match="no launch command"):
        read_run(_script(tmp_path, "export A=1\n"))
    with pytest.raises(UserError, match="unbalanced quote"):
        read_run(_script(tmp_path, "python3 train.py --x 'open\n"))
