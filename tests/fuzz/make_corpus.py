"""Writes the fuzz corpus: small malformed inputs of every kind a stranger can hand a command.

    python tests/fuzz/make_corpus.py        # rewrites tests/fuzz/corpus/ (deterministic: same files every run)

Each class of attack comes from the adversarial review of the commands: YAML bombs and deep nesting, YAML 1.1
surprises in number fields, broken model cards and hardware tables, logs with zero/negative/NaN step times or
clocks stepping back, deeply nested JSON lines, CSVs that overflow the correlation, run scripts that pass a flag
twice, malformed rules files and conversation files. Inputs that cannot be committed (FIFOs, non-UTF-8 file
names, files over the size limits) are made at test time by tests/fuzz/cases.py.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import yaml
from model_configs import corpus as model_config_corpus

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"
REPO = HERE.parents[1]
SEED_RECIPE = REPO / "recipes/gpt-oss-20b/h200/attune-tp1-pp1-ep4.yaml"
SEED_CARD = REPO / "models/gpt-oss-20b.yaml"
FIXTURE_LOGS = REPO / "tests/fixtures/logs"
MARK = "__FUZZ_VALUE__"
_target = CORPUS  # where _write puts files (a test regenerates the corpus elsewhere to compare)

# Raw YAML tokens that a YAML 1.1 reader turns into surprises, or that no catalog file may hold.
YAML_TOKENS = [
    ".inf", "-.inf", ".nan", ".NaN", "0x10", "0o17", "017", "1:30", "190:20:30", "1_000", "2026-01-01", "yes", "no",
    "on", "off", "~", "9" * 400, "-" + "9" * 400, "1e400", "1.0e+400", "-1.0e+400", "1.0e-400", "-0", "-1", "0",
    "''", "[]", "{}", "[1, 2]", "{a: 1}", "!!float 1", "!!binary aGk=", "!!python/object/apply:os.system ['true']",
    "!!str 8", "&a 8", "*undefined", '"\\0"', '"\\x01\\x02"', "9223372036854775808", "18446744073709551616",
]
NUMBER_FIELDS = [
    ("gpu", "count"), ("gpu", "memory_gb"), ("gpu", "per_node"), ("workload", "global_batch"),
    ("workload", "row_tokens"), ("layout", "tp"), ("layout", "ep"), ("layout", "max_tokens_per_gpu"),
    ("result", "tokens_per_s_per_gpu"), ("result", "mfu"), ("result", "window"), ("result", "gpu_hours"),
    ("result", "step_time_cv_percent"), ("result", "measured"), ("workload", "dataset", "build", "seed"),
]
STRING_FIELDS = [("model",), ("gpu", "type"), ("gpu", "instance"), ("stack", "cuda"), ("layout", "label")]
HOSTILE_STRINGS = [
    "<script>alert(1)</script>", "../../../../etc/passwd", "a\u202eb", "\u0000", "x" * 5000, "%s%n%x", "${HOME}",
    "'; DROP TABLE recipes; --", "\ud83d\ude00" * 100, " ", "",
]


def _write(folder: str, name: str, data: str | bytes) -> None:
    path = _target / folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    path.write_bytes(data)


def _dump(data: object) -> str:
    return yaml.safe_dump(data, sort_keys=False, width=1000, allow_unicode=True)


def _set(data: dict, path: tuple, value: object) -> dict:
    copy = json.loads(json.dumps(data, default=str))
    target = copy
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return copy


def _delete(data: dict, path: tuple) -> dict:
    copy = json.loads(json.dumps(data, default=str))
    target = copy
    for key in path[:-1]:
        target = target[key]
    del target[path[-1]]
    return copy


def recipes() -> None:
    text = SEED_RECIPE.read_text(encoding="utf-8")
    seed = yaml.safe_load(text)
    n = 0

    def add(name: str, data: str | bytes) -> None:
        nonlocal n
        n += 1
        _write("recipes", f"{n:03d}-{name}.yaml", data)

    for path in NUMBER_FIELDS:
        for i, token in enumerate(YAML_TOKENS):
            add(f"{'.'.join(path)}-{i}", _dump(_set(seed, path, MARK)).replace(MARK, token))
    for path in STRING_FIELDS:
        for i, value in enumerate(HOSTILE_STRINGS):
            add(f"{'.'.join(path)}-str{i}", _dump(_set(seed, path, value)).encode("utf-8", "surrogatepass"))
    for path in [("gpu",), ("result",), ("layout",), ("run",), ("model",), ("result", "window"), ("env",)]:
        add(f"missing-{'.'.join(path)}", _dump(_delete(seed, path)))
    # YAML bombs: anchors and aliases, merge keys.
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(8))
    add("billion-laughs", bomb)
    add("bomb-in-field", text.replace("model: gpt-oss-20b", "x: &x [1, 2]\nmodel: *x", 1))
    add("merge-key", "base: &b {a: 1}\nother:\n  <<: *b\n" + text)
    add("alias-only", "*nothing\n")
    # Deep nesting in every shape (the composer recursed in C and crashed at depth ~30,000).
    for depth in (40, 1000, 30000):
        add(f"deep-list-{depth}", "[" * depth + "]" * depth + "\n")
        add(f"deep-flow-map-{depth}", "{a: " * depth + "1" + "}" * depth + "\n")
    add("deep-block", "".join("  " * i + "- \n" for i in range(200)))
    add("deep-in-run", text.replace("\nrun: |", "\nx: " + "[" * 5000 + "]" * 5000 + "\nrun: |", 1))
    # Not a mapping, several documents, directives, encodings.
    for name, doc in [("empty", ""), ("null", "null\n"), ("list", "- 1\n- 2\n"), ("scalar", "hello\n"),
                      ("dashes", "---\n"), ("two-docs", text + "\n---\n" + text),
                      ("yaml-1.1", "%YAML 1.1\n---\n" + text),
                      ("tag-directive", "%TAG ! tag:evil.com,2000:\n---\n" + text), ("only-comment", "# nothing\n"),
                      ("tab-indent", text.replace("\n  ", "\n\t")), ("crlf", text.replace("\n", "\r\n")),
                      ("cr-only", text.replace("\n", "\r")), ("unclosed-quote", text + '\nnotes: "open\n'),
                      ("duplicate-key", text + "\nmodel: again\n"), ("complex-key", "? [a, b]\n: 1\n" + text),
                      ("int-key", "1: x\n" + text), ("null-key", "~: x\n" + text), ("bool-key", "true: x\n" + text),
                      ("unknown-field", text + "\nsurprise: 1\n"), ("long-line", "notes: " + "x" * 60000 + "\n" + text),
                      ("many-keys", "".join(f"k{i}: {i}\n" for i in range(5000)))]:
        add(name, doc)
    add("bom", "\ufeff" + text)
    add("utf16", text.encode("utf-16"))
    add("latin1", text.replace("gpt-oss-20b", "gpt-oss-20b\u00e9", 1).encode("latin-1", "replace"))
    add("invalid-utf8", text.encode() + b"\nnotes: \xff\xfe\n")
    add("null-bytes", text.encode().replace(b"model:", b"mo\x00del:", 1))
    add("binary", bytes(range(256)) * 8)
    # The run command: the shell reader's inputs.
    run_values = [
        "python3 x.py --a 'open", 'python3 x.py --a "open', "python3 x.py --a $(open", "python3 x.py --a \\",
        "export A\npython3 x.py", "ARR=(\n--a 1\n", "python3 x.py " + "--f 1 " * 3000,
        "python3 x.py --a 1 --a 2", "python3 x.py " + "\\\n" * 3000, "python3 x.py --a " + "$(" * 500 + ")" * 500,
        "python3 x.py --a " + "'x'" * 3000, "\u202epython3 x.py", "", "#!/bin/sh\n# only comments",
        "python3 x.py --a ${UNDEFINED[@]}", "export " + "A=1 " * 2000 + "\npython3 x.py",
    ]
    for i, value in enumerate(run_values):
        add(f"run-{i}", _dump(_set(seed, ("run",), value)))
    add("env-not-strings", _dump(_set(seed, ("env",), {"A": 1, "B": None, "C": [1]})))
    add("valid-copy", text)


def cards() -> None:
    text = SEED_CARD.read_text(encoding="utf-8")
    seed = yaml.safe_load(text)
    values = ["twenty-four", None, -1, 0, 10**400, 1e300, [1], {"a": 1}, True, "24", 1.5]
    for i, value in enumerate(values):
        value_text = "9" * 400 if value == 10**400 else None
        doc = _dump(_set(seed, ("architecture", "layers"), MARK if value_text else value))
        _write("cards", f"layers-{i}.yaml", doc.replace(MARK, value_text) if value_text else doc)
    for key in ("hidden_size", "attention_heads", "padded_vocab_size", "experts", "untied_embeddings",
                "torchtitan_model", "window_size"):
        _write("cards", f"{key}-bad.yaml", _dump(_set(seed, ("architecture", key), "many")))
    for i, (path, value) in enumerate([(("architecture",), [1, 2]), (("architecture",), None), (("name",), None),
                                       (("name",), ["x"]), (("active_params", "count"), -5),
                                       (("active_params", "count"), "1e400"), (("active_params",), "many"),
                                       (("total_params",), "lots"), (("notes",), "not a list")]):
        _write("cards", f"field-{i}.yaml", _dump(_set(seed, path, value)))
    _write("cards", "extra-field.yaml", text + "\nsurprise: 1\n")
    _write("cards", "bomb.yaml", "a: &a [x, x]\n" + text)
    _write("cards", "deep.yaml", "[" * 30000 + "]" * 30000)
    _write("cards", "not-utf8.yaml", text.encode() + b"\n# \xff\n")
    _write("cards", "list.yaml", "- 1\n")
    _write("cards", "empty.yaml", "")


def hardware() -> None:
    gpus = yaml.safe_load((REPO / "hardware/gpus.yaml").read_text(encoding="utf-8"))
    instances = yaml.safe_load((REPO / "hardware/instances.yaml").read_text(encoding="utf-8"))
    gpu, instance = next(iter(gpus)), next(iter(instances))
    for i, token in enumerate([".inf", ".nan", "0", "-1", "1.0e+400", "lots", "0x10", "[]", "~", "9" * 400]):
        _write("hardware", f"gpus-peak-{i}.yaml",
               _dump(_set(gpus, (gpu, "peak_bf16_flops"), MARK)).replace(MARK, token))
        _write("hardware", f"instances-price-{i}.yaml",
               _dump(_set(instances, (instance, "usd_per_hour"), MARK)).replace(MARK, token))
    for i, doc in enumerate(["- 1\n", "", "x: 1\n", "x: [1]\n", "&a x: *a\n", "[" * 30000]):
        _write("hardware", f"gpus-shape-{i}.yaml", doc)
        _write("hardware", f"instances-shape-{i}.yaml", doc)


def _lines(name: str) -> list[str]:
    return (FIXTURE_LOGS / name).read_text(encoding="utf-8").splitlines()


def logs() -> None:
    megatron = "\n".join(
        f" [2026-10-20 08:{i:02d}:00] iteration {i:8d}/      10 | elapsed time per iteration (ms): {12000 + i * 7}.5 | "
        f"lm loss: {2.5 - i * 0.05:.6E} | grad norm: {3.0 - i * 0.1:.3f} |" for i in range(1, 11)) + "\n"
    jsonl = "".join(json.dumps({"step": i, "step_time_s": 12.0 + i / 10, "loss": 2.5 - i / 20}) + "\n"
                    for i in range(10))
    slime = "\n".join(_lines("slime-gpt-oss-20b-attune-tp1-pp1-ep4.log")) + "\n"
    titan = "\n".join(_lines("torchtitan-0.2.2-qwen3-8b-fsdp2-2xh200.log")) + "\n"
    n = 0

    def add(name: str, data: str | bytes, suffix: str = ".log") -> None:
        nonlocal n
        n += 1
        _write("logs", f"{n:03d}-{name}{suffix}", data)

    add("megatron-good", megatron)
    for i, value in enumerate(["0", "-12000.5", "nan", "inf", "-inf", "1e308", "1e400", "abc", "", "9" * 400,
                               "0.0000001", "1,2,3"]):
        add(f"megatron-elapsed-{i}", megatron.replace("12035.5", value, 1))
    for i, value in enumerate(["nan", "inf", "1e400", "-1e308", "x"]):
        add(f"megatron-loss-{i}", megatron.replace("2.250000E+00", value, 1))
    add("megatron-iteration-huge", megatron.replace("iteration        5/", "iteration " + "9" * 400 + "/", 1))
    add("megatron-total-huge", megatron.replace("/      10 |", "/ " + "9" * 4400 + " |", 1))
    add("megatron-missing-step", megatron.replace(" [2026-10-20 08:05:00] iteration        5/", " [x] noise ", 1))
    add("megatron-repeated-step", megatron + megatron.splitlines()[3] + "\n")
    add("megatron-cut-off", megatron[: len(megatron) - 40])
    add("megatron-memory-regex-bomb", "(after 1 iterations) memory (MB) " * 3000 + "\n" + megatron)
    add("megatron-memory-bad", "[Rank 0] (after 1 iterations) memory (MB) | max allocated: nan |\n" + megatron)
    add("megatron-memory-huge-iteration", "(after " + "9" * 5000 + " iterations) memory (MB) | max allocated: 1 |\n"
        + megatron)
    add("jsonl-good", jsonl, ".jsonl")
    for i, value in enumerate(["0", "-1", "NaN", "Infinity", "-Infinity", "1e308", "1e400", '"12"', "true", "null",
                               "[]", "{}", "9" * 5000]):
        add(f"jsonl-step-time-{i}", jsonl.replace('"step_time_s": 12.3', f'"step_time_s": {value}', 1), ".jsonl")
    for i, value in enumerate(['"3"', "3.0", "true", "-3", "9" * 400, "null", "[3]"]):
        add(f"jsonl-step-{i}", jsonl.replace('"step": 3,', f'"step": {value},', 1), ".jsonl")
    add("jsonl-deep", '{"step": 0, "x": ' + "[" * 100000 + "]" * 100000 + "}\n" + jsonl, ".jsonl")
    add("jsonl-deep-later", jsonl + '{"step": 10, "x": ' + "{\"a\":" * 20000 + "1" + "}" * 20000 + "}\n", ".jsonl")
    add("jsonl-deep-strings", '{"step": 0, "s": "' + "[" * 50000 + '"}\n' + jsonl, ".jsonl")
    add("jsonl-not-object", "[1, 2]\n" + jsonl, ".jsonl")
    add("jsonl-garbage-line", jsonl + "{not json\n", ".jsonl")
    add("jsonl-huge-int-key", jsonl.replace('"loss": 2.35', '"loss": ' + "9" * 5000, 1), ".jsonl")
    add("slime-good", slime)
    for i, value in enumerate(["0.0", "-21.4", "nan", "inf", "1e400"]):
        add(f"slime-step-time-{i}", slime.replace("'perf/step_time': 21.400000", f"'perf/step_time': {value}", 1))
    add("slime-cut-dict", slime.replace("'train/step': 0}", "'train/step': 0", 1))
    add("slime-duplicate", slime + slime)
    add("slime-huge-step", slime.replace("step 0:", "step " + "9" * 400 + ":", 1))
    add("torchtitan-good", titan)
    lines = titan.splitlines()
    step_lines = [i for i, line in enumerate(lines) if "step:" in line and "loss:" in line]
    back = list(lines)
    back[step_lines[5]] = back[step_lines[5]].replace("2026-11-30 01:0", "2026-11-30 00:0", 1)
    add("torchtitan-clock-back-hour", "\n".join(back) + "\n")
    same = list(lines)
    same[step_lines[6]] = same[step_lines[6]][:30] + same[step_lines[5]][30:60] + same[step_lines[6]][60:]
    add("torchtitan-same-timestamp", "\n".join(same) + "\n")
    for i, stamp in enumerate(["2026-13-45 99:99:99,000", "0000-00-00 00:00:00,000", "9999-12-31 23:59:59,999"]):
        bad = list(lines)
        bad[step_lines[4]] = bad[step_lines[4]].replace(bad[step_lines[4]][15:38], stamp, 1)
        add(f"torchtitan-bad-stamp-{i}", "\n".join(bad) + "\n")
    no_stamp = list(lines)
    no_stamp[step_lines[3]] = "step:  4  loss: 9.0  grad_norm: 1.0"
    add("torchtitan-no-stamp", "\n".join(no_stamp) + "\n")
    add("torchtitan-loss-nan", titan.replace("loss: 10.00105", "loss: nan", 1))
    add("torchtitan-huge-step", titan.replace("step:  2 ", "step:  " + "9" * 400 + " ", 1))
    add("torchtitan-colour-flood", "\x1b[" + "1;" * 50000 + "\n" + titan)
    add("mixed-formats", megatron + slime)
    for name, data in [("empty", ""), ("blank-lines", "\n\n\n"), ("binary", bytes(range(256)) * 40),
                       ("not-utf8", megatron.encode().replace(b"lm loss", b"lm \xff\xfeloss")),
                       ("null-bytes", megatron.replace("|", "\x00|")), ("cr-only", megatron.replace("\n", "\r")),
                       ("one-step", megatron.splitlines()[0] + "\n"), ("no-steps", "hello\nworld\n"),
                       ("utf16", megatron.encode("utf-16"))]:
        add(name, data)


def curves() -> None:
    good = "step,loss\n" + "".join(f"{i},{2.5 - i * 0.05:.4f}\n" for i in range(20))
    n = 0

    def add(name: str, data: str | bytes) -> None:
        nonlocal n
        n += 1
        _write("curves", f"{n:03d}-{name}.csv", data)

    add("good", good)
    for i, value in enumerate(["nan", "inf", "-inf", "1e400", "1e308", "-1e308", "", "x", "9" * 5000, "0x10",
                               "1_0", " 2.0 ", "NaN", "1e-320"]):
        add(f"loss-{i}", good.replace("2.2500", value, 1))
    for i, value in enumerate(["-1", "1.5", "x", "9" * 400, "", "0x1", "1e3"]):
        add(f"step-{i}", good.replace("\n5,", f"\n{value},", 1))
    # Finite but huge anti-correlated losses: the correlation overflowed to NaN, and NaN passed.
    add("huge-up", "step,loss\n" + "".join(f"{i},{(i + 1) * 1e301:.6e}\n" for i in range(20)))
    add("huge-down", "step,loss\n" + "".join(f"{i},{(20 - i) * 1e301:.6e}\n" for i in range(20)))
    add("huge-alternating", "step,loss\n" + "".join(f"{i},{(-1) ** i * 1.7e308:.6e}\n" for i in range(20)))
    add("tiny", "step,loss\n" + "".join(f"{i},{(i + 1) * 1e-310:.6e}\n" for i in range(20)))
    add("constant", "step,loss\n" + "".join(f"{i},2.0\n" for i in range(20)))
    add("nearly-constant", "step,loss\n" + "".join(f"{i},{1 + i * 2.2e-16!r}\n" for i in range(20)))
    for name, data in [("empty", ""), ("header-only", "step,loss\n"), ("no-header", good.split("\n", 1)[1]),
                       ("other-header", "a,b\n1,2\n"), ("extra-columns", good.replace("\n3,", "\n3,1,2,3,", 1)),
                       ("missing-column", good.replace("\n3,2.3500", "\n3", 1)),
                       ("unclosed-quote", good.replace("\n4,", '\n"4,', 1)), ("semicolons", good.replace(",", ";")),
                       ("bom", "\ufeff" + good), ("duplicate-step", good + "3,2.0\n"),
                       ("field-large", "step,loss\n0," + "1" * 140000 + "\n"),
                       ("quoted-newlines", 'step,loss\n"1\n2",3\n'), ("null-bytes", good.replace(",", "\x00,", 3)),
                       ("binary", bytes(range(256)) * 20), ("not-utf8", good.encode() + b"7,\xff\n"),
                       ("one-row", "step,loss\n0,2.0\n"), ("negative-losses", good.replace(",2", ",-2")),
                       ("columns-reversed", "loss,step\n" + "".join(f"{2.5 - i * 0.05},{i}\n" for i in range(20)))]:
        add(name, data)


def scripts() -> None:
    base = (REPO / "tests/fixtures/config/gpt-oss-20b-megatron-bridge-reference.sh").read_text(encoding="utf-8")
    variants = {
        "good": base,
        "flag-twice-different": base.replace("--actor-num-nodes 1", "--actor-num-nodes 1 --actor-num-nodes 2", 1),
        "flag-twice-same": base.replace("--actor-num-nodes 1", "--actor-num-nodes 1 --actor-num-nodes 1", 1),
        "flag-twice-inline": base.replace("--actor-num-nodes 1", "--actor-num-nodes=1 --actor-num-nodes=3", 1),
        "unbalanced-quote": base + "\npython3 x.py --a 'open\n",
        "unclosed-substitution": base.replace("python3 -m", "python3 $(oops -m", 1),
        "unclosed-array": base.replace("\n)\n", "\n", 1),
        "no-launcher": "export A=1\n",
        "empty": "",
        "export-no-value": "export A\npython3 x.py\n",
        "many-flags": "python3 x.py " + " ".join(f"--f{i} {i}" for i in range(5000)) + "\n",
        "many-continuations": "python3 x.py \\\n" + "--a 1 \\\n" * 3000 + "--b 2\n",
        "trailing-backslash": "python3 x.py --a b\\",
        "nested-substitutions": "python3 x.py --a " + "$(" * 2000 + ")" * 2000 + "\n",
        "binary": bytes(range(256)) * 10,
        "not-utf8": base.encode() + b"\n# \xff\n",
        "null-bytes": base.replace("--", "\x00--", 3),
        "crlf": base.replace("\n", "\r\n"),
        "array-self-reference": "A=(\n${A[@]}\n)\npython3 x.py ${A[@]}\n",
    }
    for name, data in variants.items():
        _write("scripts", f"{name}.sh", data)
    rules = yaml.safe_load((REPO / "rules/argument-classes.yaml").read_text(encoding="utf-8"))
    rule_variants = {
        "arguments-list": "arguments: [1, 2]\n",
        "environment-list": "arguments: {}\nenvironment: [x]\n",
        "entry-not-mapping": "arguments:\n  --x: placement\n",
        "class-wrong": "arguments:\n  --x: {class: maybe, why: because}\n",
        "why-empty": "arguments:\n  --x: {class: placement, why: ''}\n",
        "why-list": "arguments:\n  --x: {class: placement, why: [a]}\n",
        "extra-key": "arguments:\n  --x: {class: placement, why: w, surprise: 1}\n",
        "top-extra": "arguments: {}\nsurprise: 1\n",
        "top-list": "- arguments\n",
        "top-scalar": "rules\n",
        "empty": "",
        "null-entry": "arguments:\n  --x: ~\n",
        "bomb": "a: &a [x, x]\narguments: {}\n",
        "deep": "arguments: " + "[" * 30000 + "]" * 30000 + "\n",
        "component-test-list": "arguments:\n  --x: {class: placement, why: w, component_test: [a]}\n",
        "int-name": "arguments:\n  1: {class: placement, why: w}\n",
        "not-utf8": b"arguments:\n  --x: {class: placement, why: \xff}\n",
        "valid-copy": _dump(rules),
    }
    for name, data in rule_variants.items():
        _write("rules", f"{name}.yaml", data)


def conversations() -> None:
    good = {"id": "x", "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}
    variants = {
        "not-json": "{not json\n",
        "list-line": "[1, 2]\n",
        "messages-missing": json.dumps({"id": "x"}) + "\n",
        "messages-not-list": json.dumps({"id": "x", "messages": "hi"}) + "\n",
        "role-missing": json.dumps({"id": "x", "messages": [{"content": "hi"}]}) + "\n",
        "role-unknown": json.dumps({"id": "x", "messages": [{"role": "wizard", "content": "hi"}]}) + "\n",
        "content-not-string": json.dumps({"id": "x", "messages": [{"role": "user", "content": [1]}]}) + "\n",
        "content-null": json.dumps({"id": "x", "messages": [{"role": "user", "content": None}]}) + "\n",
        "deep": '{"id": "x", "messages": ' + "[" * 50000 + "]" * 50000 + "}\n",
        "empty": "",
        "blank-lines": "\n\n",
        "not-utf8": json.dumps(good).encode() + b"\n\xff\xfe\n",
        "binary": bytes(range(256)) * 10,
        "huge-int": '{"id": ' + "9" * 5000 + ', "messages": []}\n',
        "nan": '{"id": NaN, "messages": []}\n',
        "good": json.dumps(good) + "\n",
    }
    for name, data in variants.items():
        _write("conversations", f"{name}.jsonl", data)
    _write("conversations", "garbage.parquet", b"PAR1" + bytes(range(256)) + b"PAR1")
    _write("conversations", "empty.parquet", b"")
    tokenizers = {
        "broken-json": {"tokenizer.json": "{not json"},
        "config-not-utf8": {"tokenizer_config.json": b'{"eos_token": "\xff"}'},
        "config-broken": {"tokenizer_config.json": "{not json"},
        "config-list": {"tokenizer_config.json": "[1, 2]"},
        "config-eos-number": {"tokenizer_config.json": '{"eos_token": 5}'},
        "empty-json": {"tokenizer.json": ""},
        "json-list": {"tokenizer.json": "[]"},
        "deep-json": {"tokenizer.json": "[" * 100000 + "]" * 100000},
    }
    for folder, files in tokenizers.items():
        for name, data in files.items():
            _write(f"tokenizers/{folder}", name, data)


def write_corpus(target: Path = CORPUS) -> None:
    global _target
    _target = target
    shutil.rmtree(target, ignore_errors=True)
    for make in (recipes, cards, hardware, logs, curves, scripts, conversations):
        make()
    model_config_corpus(_write)


def main() -> None:
    write_corpus()
    count = sum(1 for p in CORPUS.rglob("*") if p.is_file())
    size = sum(p.stat().st_size for p in CORPUS.rglob("*") if p.is_file())
    print(f"wrote {count} files ({size / 2**20:.1f} MiB) to {CORPUS.relative_to(REPO)}")


if __name__ == "__main__":
    main()
