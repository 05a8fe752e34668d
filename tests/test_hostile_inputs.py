"""What a user gets for the hostile inputs the review found, each class once, with the message that names the fix."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from conftest import GPTOSS_1, REPO
from conftest import openrecipes as run

from openrecipes.catalog.command import parse_run
from openrecipes.verify.convergence import check_convergence

TITAN_LOG = REPO / "tests/fixtures/logs/torchtitan-0.2.2-qwen3-8b-fsdp2-2xh200.log"
SCRIPT = REPO / "tests/fixtures/config/gpt-oss-20b-megatron-bridge-reference.sh"


def openrecipes(*args, cwd: Path = REPO) -> tuple[int, str, str]:
    result = run(*args, cwd=cwd)
    return result.returncode, result.stdout, result.stderr


def bad_input(*args, cwd: Path = REPO) -> str:
    code, _, stderr = openrecipes(*args, cwd=cwd)
    assert code == 2 and len(stderr.strip().splitlines()) == 1 and stderr.startswith("error: "), stderr
    return stderr


def test_a_billion_laughs_recipe_is_refused_at_its_first_anchor(tmp_path):
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(8)))
    started = time.monotonic()
    assert "bomb.yaml:1: YAML anchors and aliases" in bad_input("validate", bomb)
    assert time.monotonic() - started < 10


def test_thirty_thousand_nested_lists_are_refused_not_a_crash(tmp_path):
    deep = tmp_path / "deep.yaml"
    deep.write_text("[" * 30000 + "]" * 30000)
    assert "nested deeper than 32 levels" in bad_input("validate", deep)


@pytest.mark.parametrize("token", [".inf", ".nan", "0x10", "017", "1:30", "1_000", "2026-01-01", "9" * 400])
def test_yaml_11_numbers_are_schema_errors_naming_the_field(tmp_path, token):
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(GPTOSS_1.read_text().replace("  global_batch: 128\n", f"  global_batch: {token}\n", 1))
    assert "global_batch: 128" in GPTOSS_1.read_text()
    code, stdout, _ = openrecipes("validate", recipe, "--json")
    assert code == 1
    errors = json.loads(stdout)[0]["errors"]
    assert errors[0]["field"] == "workload.global_batch" and errors[0]["line"], errors


@pytest.mark.parametrize("value", ["twenty-four", "-1", "1.0e+400", "[24]"])
def test_a_broken_model_card_is_an_error_naming_the_card_and_field(tmp_path, value):
    for folder in ("recipes", "hardware", "models"):
        (tmp_path / folder).symlink_to(REPO / folder) if folder != "models" else None
    (tmp_path / "models").mkdir()
    for card in (REPO / "models").glob("*.yaml"):
        text = card.read_text()
        (tmp_path / "models" / card.name).write_text(text.replace("  layers: 24\n", f"  layers: {value}\n", 1))
    stderr = bad_input("list", "--catalog", tmp_path)
    assert "models/gpt-oss-20b.yaml" in stderr and "architecture.layers" in stderr


def test_a_fifo_is_refused_not_waited_on(tmp_path):
    fifo = tmp_path / "train.log"
    import os

    os.mkfifo(fifo)
    assert "not a regular file" in bad_input("measure", fifo, "--window", "0", "1")
    assert "not a regular file" in bad_input("validate", fifo)


def test_a_non_utf8_file_name_is_one_escaped_line(tmp_path):
    import os

    bad = Path(os.fsdecode(bytes(tmp_path) + b"/r\xff.yaml"))
    bad.write_bytes(GPTOSS_1.read_bytes())
    assert "r\\xff.yaml: the file name is not UTF-8" in bad_input("validate", bad)


def test_validate_with_a_file_as_catalog_is_an_error():
    assert "--catalog" in bad_input("validate", GPTOSS_1, "--catalog", GPTOSS_1)


@pytest.mark.parametrize("elapsed", ["0", "-12000.5"])
def test_zero_and_negative_step_times_are_refused_with_the_line(tmp_path, elapsed):
    log = tmp_path / "train.log"
    log.write_text("".join(f" [2026-10-20 08:00:0{i}] iteration {i}/ 4 | elapsed time per iteration (ms): "
                           f"{elapsed if i == 3 else '12000.0'} | lm loss: 2.0 |\n" for i in range(1, 5)))
    assert "train.log:3: step 2 took" in bad_input("measure", log, "--window", "0", "3")


def test_a_torchtitan_clock_stepping_back_is_refused(tmp_path):
    lines = TITAN_LOG.read_text().splitlines()
    steps = [i for i, line in enumerate(lines) if "step:" in line and "loss:" in line]
    lines[steps[5]] = lines[steps[5]].replace("2026-11-30 01:0", "2026-11-30 00:0", 1)
    log = tmp_path / "train.log"
    log.write_text("\n".join(lines) + "\n")
    assert "the clock stepped back" in bad_input("measure", log, "--window", "2", "10")


def test_deeply_nested_json_lines_are_refused(tmp_path):
    log = tmp_path / "run.jsonl"
    log.write_text('{"step": 0, "x": ' + "[" * 100000 + "]" * 100000 + "}\n")
    assert "nested deeper than 16 levels" in bad_input("measure", log, "--window", "0", "1")


def test_a_csv_field_over_the_limit_is_refused_with_its_line(tmp_path):
    curve = tmp_path / "curve.csv"
    curve.write_text("step,loss\n0,2.0\n1," + "1" * 140000 + "\n")
    assert "curve.csv:3: not a readable CSV line" in bad_input("check", "convergence", "--candidate", curve,
                                                                "--reference", curve)


def test_huge_anti_correlated_losses_fail_the_convergence_check():
    up = {i: (i + 1) * 1e301 for i in range(20)}
    down = {i: (20 - i) * 1e301 for i in range(20)}
    verdict = check_convergence(up, down)
    assert not verdict["passed"] and verdict["correlation"] == pytest.approx(-1.0)


def test_json_output_never_holds_nan(tmp_path):
    curve = tmp_path / "curve.csv"
    curve.write_text("step,loss\n" + "".join(f"{i},{'nan' if i == 9 else 2 - i / 20}\n" for i in range(20)))
    code, stdout, _ = openrecipes("check", "convergence", "--candidate", curve, "--reference", curve, "--json")
    assert code == 1
    json.loads(stdout, parse_constant=lambda name: pytest.fail(f"{name} in --json output"))


def test_a_flag_passed_twice_with_two_values_names_both(tmp_path):
    script = tmp_path / "run.sh"
    script.write_text(SCRIPT.read_text().replace("--actor-num-nodes 1", "--actor-num-nodes 1 --actor-num-nodes 2"))
    assert "--actor-num-nodes is given twice with different values (1 and 2)" in bad_input(
        "check", "config", "--candidate", script, "--reference", SCRIPT)


def test_a_rules_file_with_a_list_is_an_error_naming_the_field(tmp_path):
    rules = tmp_path / "rules.yaml"
    rules.write_text("arguments: [1, 2]\n")
    assert "rules.yaml:1: arguments: Input should be a valid dictionary" in bad_input(
        "check", "config", "--candidate", SCRIPT, "--reference", SCRIPT, "--rules", rules)


def test_the_shell_reader_is_linear_in_a_megabyte_word():
    started = time.monotonic()
    parsed = parse_run("python3 train.py --data '" + "a" * 1_000_000 + "'")
    assert len(parsed.value("--data")) == 1_000_000 and time.monotonic() - started < 5


@pytest.mark.parametrize("args, text", [
    (["serve", "--port", "-1"], "--port"), (["plan", "gpt-oss-20b", "--gpu", "H200", "--gpus", "99999"], "--gpus"),
    (["measure", "x.log", "--window", "-1", "3"], "--window"), (["nosuch"], "No such command"),
    (["plan", "gpt-oss-20b"], "give --gpu TYPE and --gpus N"),
])
def test_usage_errors_are_one_line(args, text):
    assert text in bad_input(*args)
