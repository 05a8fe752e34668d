"""Meaningful input or exit 2: input that would make a command succeed at nothing (an empty data set, an empty option
value that reads as "off", a negative or non-finite duration, a date no run can have) is refused with one line,
and the tracebacks and half-made folders strangers found are gone."""

from __future__ import annotations

import shutil
import socket

import pytest
from conftest import REPO, openrecipes
from test_audit_reproduce_record import RERUN, STOCK_8B
from test_audit_reproduce_record import catalog as catalog  # noqa: F401, PLC0414 (the fixture, shared)

CONVERSATIONS = {
    "empty": "",
    "blank lines": "\n\n   \n\t\n",
    "only invalid lines": "not json\n{\"x\": 1}\n[1, 2]\n",
    "only system messages": '{"messages": [{"role": "system", "content": "be brief"}]}\n' * 3,
}


def _one_error_line(result) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


@pytest.mark.parametrize("kind", CONVERSATIONS)
def test_rows_build_without_a_usable_conversation_is_refused_and_writes_no_rows(tmp_path, qwen3, kind):
    source = tmp_path / "conversations.jsonl"
    source.write_text(CONVERSATIONS[kind], encoding="utf-8")
    out = tmp_path / "rows"
    result = openrecipes("rows", "build", "--conversations", source, "--tokenizer", qwen3, "--chat-format", "qwen3",
                         "--rows", "2", "--row-tokens", "64", "--seed", "1", "--out", out, "--workers", "0")
    assert "no row could be built" in _one_error_line(result)
    assert not (out / "rows.parquet").exists() and not (out / "manifest.json").exists()


def test_a_chat_template_without_generation_blocks_is_one_line_and_no_library_warning(tmp_path, qwen3):
    result = openrecipes("rows", "build", "--conversations", REPO / "tests/fuzz/corpus/conversations/good.jsonl",
                         "--tokenizer", qwen3, "--chat-format", "template", "--rows", "2", "--row-tokens", "64",
                         "--seed", "1", "--out", tmp_path / "rows", "--workers", "0")
    assert "{% generation %}" in _one_error_line(result)


@pytest.mark.parametrize("argv", [
    ["plan", "qwen3-8b", "--gpu", "H200", "--gpus", "2", "--kernels", ""],
    ["plan", "qwen3-8b", "--gpu", "H200", "--gpus", "2", "--float8", ""],
    ["plan", "qwen3-8b", "--gpu", "H200", "--gpus", "2", "--attention= "],
    ["serve", "--host", "", "--port", "HELD"],
    ["serve", "--host=", "--port", "HELD"],
    ["reproduce", STOCK_8B, "x.log", "--by", ""],
])
def test_an_empty_option_value_is_refused(argv):
    with socket.socket() as held:  # a port in use: were the empty host taken, serve would fail, not serve forever
        held.bind(("0.0.0.0", 0))
        held.listen()
        port = str(held.getsockname()[1])
        assert "the value is empty" in _one_error_line(openrecipes(*[port if a == "HELD" else a for a in argv]))


@pytest.mark.parametrize("option, value", [("--wall-minutes", "-1"), ("--wall-minutes", "nan"),
                                           ("--wall-minutes", "inf"), ("--wall-minutes", "0"),
                                           ("--budget-minutes", "nan"), ("--steps", "99999999999999"),
                                           ("--lanes", "0"), ("--window-from", "-1")])
def test_tune_refuses_meaningless_durations_and_counts(option, value):
    argv = ["tune", "qwen3-8b", "--gpu", "H200", "--gpus", "2", "--budget-minutes", "5", option, value, "--dry-run"]
    _one_error_line(openrecipes(*argv))


@pytest.mark.parametrize("field, old, new", [
    ("result.measured", "measured: 2026-11-30", "measured: 1900-01-01"),
    ("result.measured", "measured: 2026-11-30", "measured: 2099-01-01"),
    ("reproductions.0.date", "- date: '2026-11-30'", "- date: '2019-12-31'"),
])
def test_a_date_outside_the_engines_lifetime_is_refused(catalog, field, old, new):  # noqa: F811
    recipe = catalog / STOCK_8B
    text = recipe.read_text(encoding="utf-8")
    assert old in text
    recipe.write_text(text.replace(old, new, 1), encoding="utf-8")
    result = openrecipes("validate", recipe, "--catalog", catalog)
    assert result.returncode == 1 and field in result.stdout, result.stdout


def test_record_with_a_command_sh_that_is_not_utf8_is_one_line(catalog):  # noqa: F811
    run = catalog / "runs/my-run"
    shutil.copytree(catalog / RERUN / "stock", run)
    (run / "command.sh").write_bytes(b"torchrun \xff\xfe --x\n")
    result = openrecipes("record", run, "--like", catalog / STOCK_8B, "--name", "mine")
    assert "not UTF-8" in _one_error_line(result)


def test_tune_without_torchrun_leaves_no_run_folder(catalog, tmp_path, monkeypatch):  # noqa: F811
    monkeypatch.setenv("PATH", str(tmp_path / "empty-path"))
    before = sorted(p.name for p in (catalog / "runs").iterdir())
    result = openrecipes("tune", "qwen3-8b", "--gpu", "H200", "--gpus", "2", "--budget-minutes", "5", cwd=catalog)
    assert "torchrun: not found" in _one_error_line(result)
    assert sorted(p.name for p in (catalog / "runs").iterdir()) == before


def test_the_run_folder_tune_would_name_is_not_made_by_a_failing_run(tmp_path, monkeypatch):
    from openrecipes.errors import UserError
    from openrecipes.launch.execute import execute

    class Launch:
        env: dict[str, str] = {}
        nnodes = nproc_per_node = steps = 1

        def argv(self) -> list[str]:
            return ["no-such-launcher-anywhere"]

    with pytest.raises(UserError, match="not found on PATH"):
        execute(Launch(), tmp_path / "runs/tune-x/reference", tokens_per_step=1)  # type: ignore[arg-type]
    assert not (tmp_path / "runs").exists()
