"""The validator passes the catalog and rejects each mutation with a sentence naming the field."""

from __future__ import annotations

import copy

import pytest
from conftest import GLM_16K, GPTOSS_1, REPO, load_seed, write_recipe

from openrecipes.catalog.validate import recipe_files, validate_file
from openrecipes.engines.megatron import flags


def errors_of(tmp_path, data):
    report = validate_file(write_recipe(tmp_path, data))
    return {e.field: e.message for e in report.errors}


def test_every_catalog_file_validates():
    files = recipe_files([REPO / "recipes"])
    assert len(files) >= 9
    for path in files:
        report = validate_file(path)
        assert report.ok, (path, report.errors)


def test_unmodified_seed_written_back_is_valid(tmp_path):
    assert errors_of(tmp_path, load_seed(GLM_16K)) == {}
    assert errors_of(tmp_path, load_seed(GPTOSS_1)) == {}


def mutate(seed, path, value):
    data = copy.deepcopy(load_seed(seed))
    target = data
    *parents, last = path.split(".")
    for key in parents:
        target = target[int(key)] if isinstance(target, list) else target[key]
    target[last] = value
    return data


def set_flag(run: str, flag: str, value: str | None) -> str:
    """Replace `flag <old>` (or drop the flag when value is None) in a run command."""
    import re

    pattern = re.compile(rf"{re.escape(flag)}(?= |\\|$)( [^-\\\s][^\s]*)?")
    assert pattern.search(run), flag
    return pattern.sub("" if value is None else f"{flag} {value}", run, count=1)


@pytest.mark.parametrize(
    ("seed", "path", "value", "field", "expected"),
    [
        (GLM_16K, "layout.dp", 3, "layout.dp", "expected dp = 2"),
        (GLM_16K, "layout.rows_per_microbatch", 4, "layout.rows_per_microbatch", "expected 8"),
        (GLM_16K, "result.window_tokens", 15728641, "result.window_tokens", "expected 15728640"),
        (GLM_16K, "result.mfu", 0.0165, "result.mfu", "expected 0.01578"),
        (GLM_16K, "result.usd_per_million_tokens", 25.95, "result.usd_per_million_tokens", "expected 26.95"),
        (GPTOSS_1, "result.usd_per_million_tokens", 0.25, "result.usd_per_million_tokens", "expected 0.2096"),
        (GPTOSS_1, "result.mfu", 0.2394, "result.mfu", "expected 0.2294"),
        (GLM_16K, "result.window", [5, 20], "result.window", "inside steps 0..19"),
        (GLM_16K, "workload.dataset.rows_sha256", "bb30", "workload.dataset.rows_sha256", "pattern"),
        (GLM_16K, "workload.dataset.build.parquet_sha256", "Z" * 64, "workload.dataset.build.parquet_sha256",
         "pattern"),
        (GLM_16K, "result.measured", "2026-02-30", "result.measured", "date"),
        (GLM_16K, "correctness.component_tests.0.date", "2026-13-01", "correctness.component_tests.0.date", "date"),
        (GLM_16K, "gpu.instance", "AWS p9.48xlarge", "gpu.instance", "known: AWS p5.48xlarge"),
        (GLM_16K, "gpu.instance", "AWS p5en.48xlarge", "gpu.instance", "H200 GPUs, not B200"),
        (GLM_16K, "gpu.memory_gb", 141, "gpu.memory_gb", "expected 180"),
        (GLM_16K, "result.active_params.count", 40297758721, "result.active_params.count", "expected 40297758720"),
        (GLM_16K, "model", "GLM-9", "model", "no model card"),
        (GLM_16K, "env.CUDA_DEVICE_MAX_CONNECTIONS", "2", "env.CUDA_DEVICE_MAX_CONNECTIONS", "exports '1'"),
        (GLM_16K, "stack.cuda", 12.9, "stack.cuda", "valid string"),
        (GLM_16K, "layout.tpp", 4, "layout.tpp", "not a field of the schema"),
        (GPTOSS_1, "workload.dataset.build.row_tokens", 4096, "workload.dataset.build.row_tokens", "expected 8192"),
    ],
)
def test_each_mutation_is_caught_with_its_field(tmp_path, seed, path, value, field, expected):
    errors = errors_of(tmp_path, mutate(seed, path, value))
    assert field in errors, errors
    assert expected in errors[field]


def test_missing_field_is_named(tmp_path):
    data = load_seed(GLM_16K)
    del data["result"]["window"]
    errors = errors_of(tmp_path, data)
    assert "is missing" in errors["result.window"]


def test_layer_split_must_sum_to_the_models_layers(tmp_path):
    data = mutate(GLM_16K, "layout.layer_split.first", 37)
    data["run"] = set_flag(data["run"], "--decoder-first-pipeline-num-layers", "37")
    errors = errors_of(tmp_path, data)
    assert list(errors) == ["layout.layer_split"] and "expected first + last = 78" in errors["layout.layer_split"]


def test_even_split_must_divide_the_layers(tmp_path):
    data = mutate(GPTOSS_1, "layout.pp", 5)
    data["layout"]["dp"] = 1
    data["layout"]["ep"] = 1
    data["run"] = set_flag(set_flag(data["run"], "--pipeline-model-parallel-size", "5"),
                           "--expert-model-parallel-size", "1")
    data["gpu"]["count"] = 5
    data["run"] = set_flag(data["run"], "--actor-num-gpus-per-node", "5")
    data["gpu"]["per_node"] = 5
    assert "layout.pp" in errors_of(tmp_path, data)


def test_expert_parallel_must_divide_tp_cp_dp(tmp_path):
    data = mutate(GLM_16K, "layout.ep", 24)
    data["run"] = set_flag(data["run"], "--expert-model-parallel-size", "24")
    errors = errors_of(tmp_path, data)
    assert list(errors) == ["layout.ep"] and "does not divide TP*CP*DP = 32" in errors["layout.ep"]


def test_gpu_count_must_match_the_commands_nodes(tmp_path):
    data = load_seed(GLM_16K)
    data["run"] = set_flag(data["run"], "--actor-num-nodes", "4")
    errors = errors_of(tmp_path, data)
    assert list(errors) == ["gpu.count"] and "4 node(s) x 8 GPUs = 32" in errors["gpu.count"]


def test_env_must_equal_the_commands_exports(tmp_path):
    data = load_seed(GPTOSS_1)
    data["env"]["EXTRA_VAR"] = "1"
    errors = errors_of(tmp_path, data)
    assert "never exports it" in errors["env.EXTRA_VAR"]
    data = load_seed(GPTOSS_1)
    del data["env"]["PARITY_PROBE"]
    assert "PARITY_PROBE=0" in errors_of(tmp_path, data)["env"]


def _flag_mutations():
    for row in flags.FLAGS:
        if row.field.startswith(("gpu.", "layout.layer_split", "layout.recompute", "layout.offload.")) and \
                row.kind != "switch":
            continue  # these are covered by dedicated tests above (their field change breaks other checks too)
        yield row


@pytest.mark.parametrize("row", list(_flag_mutations()), ids=lambda r: r.flag)
def test_each_layout_flag_is_compared_with_its_field(tmp_path, row):
    """Change only the command: the error must name the layout field that the flag carries."""
    data = load_seed(GLM_16K)
    run = data["run"]
    if row.kind == "switch":
        run = set_flag(run, row.flag, None) if row.flag in run else run.rstrip("\n") + f" \\\n  {row.flag}\n"
    elif row.flag in run:
        current = next(w for w in run.split(f"{row.flag} ")[1].split()[:1])
        changed = "alltoallx" if row.kind == "str" else str(float(current) / 2 if row.kind == "float"
                                                            else int(current) * 2)
        run = set_flag(run, row.flag, changed)
    else:
        run = run.rstrip("\n") + f" \\\n  {row.flag} 3\n"
    data["run"] = run
    errors = errors_of(tmp_path, data)
    assert row.field in errors, errors
    assert row.flag in errors[row.field]


def test_recompute_and_offload_flags_are_compared(tmp_path):
    data = load_seed(GLM_16K)
    data["run"] = set_flag(data["run"], "--recompute-granularity", "selective")
    assert "--recompute-granularity selective" in errors_of(tmp_path, data)["layout.recompute.granularity"]
    data = load_seed(GLM_16K)
    data["run"] = set_flag(data["run"], "--optimizer-offload-fraction", "0.5")
    assert "expected --optimizer-offload-fraction 0.9" in errors_of(tmp_path, data)["layout.offload.optimizer_fraction"]
    data = load_seed(GPTOSS_1)
    data["run"] = data["run"].rstrip("\n") + " \\\n  --recompute-granularity full\n"
    assert "is null but the run command passes" in errors_of(tmp_path, data)["layout.recompute.granularity"]


def test_every_error_is_reported_at_once_with_lines(tmp_path):
    data = mutate(GLM_16K, "layout.rows_per_microbatch", 4)
    data["result"]["window_tokens"] = 1
    path = write_recipe(tmp_path, data)
    report = validate_file(path)
    fields = {e.field for e in report.errors}
    assert {"layout.rows_per_microbatch", "result.window_tokens"} <= fields
    text = path.read_text().splitlines()
    for error in report.errors:
        key = error.field.rsplit(".", 1)[-1]
        assert text[error.line - 1].strip().startswith(f"{key}:")


def test_duplicate_keys_are_rejected(tmp_path):
    path = tmp_path / "dup.yaml"
    path.write_text(GPTOSS_1.read_text() + "model: gpt-oss-20b\n")
    report = validate_file(path)
    assert report.unreadable and "written twice" in report.errors[0].message


def test_named_run_folders_must_hold_their_raw_log(tmp_path):
    recipe = REPO / "recipes/qwen3-8b/h200/openrecipes-fsdp2-compile-noac-mb1.yaml"
    data = load_seed(recipe)
    data["runs"]["reference"] = "runs/no-such-run"
    errors = errors_of(tmp_path, data)
    assert "holds no train.log" in errors["runs.reference"]
    assert "runs.candidate" in errors  # the tmp catalog has no runs/ at all


@pytest.mark.parametrize("mutate, field", [
    (lambda c: c["convergence"].update(correlation=0.5), "correctness.convergence.correlation"),
    (lambda c: c["convergence"].update(final_loss_difference=0.08), "correctness.convergence.final_loss_difference"),
    (lambda c: c["convergence"].update(pointwise_failures=5), "correctness.convergence.pointwise_failures"),
    (lambda c: c["convergence"].update(result="fail"), "correctness.result"),
    (lambda c: c.update(configuration="fail: a numerics argument changed"), "correctness.result"),
])
def test_a_verdict_its_figures_do_not_support_is_rejected(tmp_path, mutate, field):
    data = load_seed(GPTOSS_1)
    mutate(data["correctness"])
    assert field in errors_of(tmp_path, data)


def test_verified_needs_passed_checks(tmp_path):
    data = load_seed(GPTOSS_1)
    data["correctness"]["result"] = "pending"
    assert "verified" in errors_of(tmp_path, data)["status"]


def test_a_failed_component_test_cannot_sit_under_an_overall_pass(tmp_path):
    data = load_seed(GLM_16K)
    data["correctness"]["component_tests"][0]["result"] = "fail"
    assert "correctness.component_tests.0.result" in errors_of(tmp_path, data)

def test_a_summary_whose_source_publishes_no_price_shows_it_as_not_published(tmp_path):
    from openrecipes.catalog import facts

    text = (REPO / "recipes/llama-3.1-8b/h100/published-summary.yaml").read_text()
    assert "usd_per_million_tokens: null" in text
    report = validate_file(REPO / "recipes/llama-3.1-8b/h100/published-summary.yaml")
    assert report.ok, report.errors
    assert report.entry.result.usd_per_million_tokens is None
    assert facts.usd(report.entry.result.usd_per_million_tokens) == "not published"
    assert facts.usd(0.25) == "$0.25"
