"""The catalog commands as a user runs them: exit codes, the --json contract, one-line errors."""

from __future__ import annotations

import json

from conftest import GLM_16K, load_seed, openrecipes, write_recipe


def test_validate_catalog_exit_0_and_json_contract():
    result = openrecipes("validate", "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    reports = json.loads(result.stdout)
    assert len(reports) >= 9
    assert all(set(r) == {"path", "ok", "errors", "findings"} and r["ok"] for r in reports)


def test_validate_invalid_exit_1_names_field_and_line(tmp_path):
    data = load_seed(GLM_16K)
    data["layout"]["dp"] = 3
    path = write_recipe(tmp_path, data)
    result = openrecipes("validate", str(path), "--json")
    assert result.returncode == 1
    [report] = json.loads(result.stdout)
    [error] = [e for e in report["errors"] if e["field"] == "layout.dp"]
    assert error["field"] == "layout.dp" and "expected dp = 2" in error["message"] and error["line"] > 1
    human = openrecipes("validate", str(path))
    assert human.returncode == 1 and "layout.dp" in human.stdout and "Traceback" not in human.stderr


def test_unreadable_file_exit_2(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_bytes(b"model: [unclosed\n")
    result = openrecipes("validate", str(bad))
    assert result.returncode == 2 and "not valid YAML" in result.stdout and "Traceback" not in result.stderr
    missing = openrecipes("validate", str(tmp_path / "nope.yaml"))
    assert missing.returncode == 2
    assert missing.stderr.strip().count("\n") == 0 and "no such file" in missing.stderr


def test_list_ranks_by_tokens_per_s_and_show_prints_a_recipe():
    listing = openrecipes("list")
    assert listing.returncode == 0
    out = listing.stdout
    assert out.index("attune-tp4-pp2-cp4-mt16k") < out.index("attune-tp4-pp2-cp4-mt12k") < out.index(
        "attune-tp4-pp2-cp8")
    assert out.index("attune-tp1-pp1-ep4") < out.index("attune-tp1-pp2-ep4")
    assert "10,483.9" in out and "146.8" in out
    shown = openrecipes("show", "attune-tp1-pp1-ep4")
    assert shown.returncode == 0 and "22.9% (N = 3,607,142,400" in shown.stdout
    unknown = openrecipes("show", "no-such-recipe")
    assert unknown.returncode == 2 and "no recipe named 'no-such-recipe'" in unknown.stderr


def test_schema_is_generated_from_the_model_and_checked_in():
    result = openrecipes("schema", "--check")
    assert result.returncode == 0, "schema/recipe.schema.yaml is stale: run `openrecipes schema`"


def test_recipe_text_is_shown_as_written_never_read_as_markup(tmp_path):
    data = load_seed(GLM_16K)
    data["layout"]["label"] = "TP4 [ep32] [/] PP2"
    data["layout"]["summary"] = "[bold]not bold[/bold] [/]"
    write_recipe(tmp_path, data)
    listing = openrecipes("list", "--catalog", str(tmp_path))
    assert listing.returncode == 0 and "TP4 [ep32] [/] PP2" in listing.stdout
    shown = openrecipes("show", "recipe", "--catalog", str(tmp_path))
    assert shown.returncode == 0 and "[bold]not bold[/bold] [/]" in shown.stdout
    data["env"]["CUDA_DEVICE_MAX_CONNECTIONS"] = "[/]"
    path = write_recipe(tmp_path, data)
    result = openrecipes("validate", str(path))
    assert result.returncode == 1 and "Traceback" not in result.stderr and "'[/]'" in result.stdout


def test_an_unwritable_output_path_is_bad_input_not_a_traceback(tmp_path):
    result = openrecipes("launch", "recipes/qwen3-8b/h200/openrecipes-fsdp2-compile-noac-mb1.yaml", "--slurm",
                         "--out", str(tmp_path / "missing-folder" / "job.sbatch"))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.startswith("error: ") and "check the path" in result.stderr
