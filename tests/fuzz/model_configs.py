"""Fuzz inputs for `openrecipes model add`: malformed Hugging Face config.json files (corpus/model_configs/, written
by make_corpus.py) and the cases that hand each one, and the special files, to the command."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from run import Case

REPO = Path(__file__).resolve().parents[2]
BASE = json.loads((REPO / "models/configs/qwen3-30b-a3b.json").read_text(encoding="utf-8"))
DEEPSEEK = json.loads((REPO / "models/configs/deepseek-v3.json").read_text(encoding="utf-8"))
FIELDS = ["num_hidden_layers", "hidden_size", "num_attention_heads", "num_key_value_heads", "head_dim", "vocab_size",
          "num_experts", "num_experts_per_tok", "moe_intermediate_size", "decoder_sparse_step", "tie_word_embeddings",
          "mlp_only_layers", "model_type", "architectures"]
VALUES: list[object] = [None, 0, -1, 1.5, 2**64, "8", True, [], {}, 1e308, "qwen3_moe", ["X"], 2**50]


def corpus(write: Callable[[str, str, str | bytes], None]) -> None:
    for field in FIELDS:
        for i, value in enumerate(VALUES):
            write("model_configs", f"{field}-{i}.json", json.dumps(BASE | {field: value}))
        write("model_configs", f"{field}-missing.json", json.dumps({k: v for k, v in BASE.items() if k != field}))
    for field in ("q_lora_rank", "kv_lora_rank", "first_k_dense_replace", "n_shared_experts", "qk_rope_head_dim"):
        for i, value in enumerate((None, 0, -3, 10**6, "x")):
            write("model_configs", f"deepseek-{field}-{i}.json", json.dumps(DEEPSEEK | {field: value}))
    raw = {
        "nan": json.dumps(BASE).replace('"rms_norm_eps": 1e-06', '"rms_norm_eps": NaN'),
        "infinity": json.dumps(BASE).replace('"rms_norm_eps": 1e-06', '"rms_norm_eps": -Infinity'),
        "overflow": json.dumps(BASE).replace('"rms_norm_eps": 1e-06', '"rms_norm_eps": 1e999'),
        "deep": "[" * 10_000 + "]" * 10_000,
        "deep-in-string": json.dumps(BASE | {"note": "[" * 10_000}),
        "not-json": "hidden_size: 4096\n",
        "empty": "",
        "list": "[1, 2]",
        "not-utf8": b'{"model_type": "\xff"}',
        "huge-int": '{"model_type": "qwen3", "hidden_size": ' + "9" * 5000 + "}",
        "duplicate-keys": '{"model_type": "qwen3", "model_type": "llama"}',
        "topk-over-experts": json.dumps(BASE | {"num_experts_per_tok": 129}),
        "heads-do-not-divide": json.dumps({k: v for k, v in BASE.items() if k != "head_dim"}
                                          | {"num_attention_heads": 48}),
        "valid": json.dumps(BASE),
    }
    for name, data in raw.items():
        write("model_configs", f"{name}.json", data)


def cases(files: list[Path], special: dict[str, Path], folder: Callable[[], Path], here: Path) -> list[Case]:
    made = []
    for path in files + list(special.values()):
        out = folder()
        made.append(Case(f"model add/{path.name}", "model add",
                         ["model", "add", str(path), "--name", "fuzz", "--out", str(out / "fuzz.yaml")], str(here)))
    not_a_card = folder() / "notes.yaml"
    not_a_card.write_text("keep me\n", encoding="utf-8")
    made.append(Case("model add/over-a-file-that-is-not-a-card", "model add",
                     ["model", "add", str(REPO / "models/configs/qwen3-8b.json"), "--name", "x", "--out",
                      str(not_a_card)], str(here), expect=(2,)))
    return made
