"""`openrecipes model add` refuses every config it cannot count exactly and every name that is not a plain slug: exit
2, one line naming the key (never pydantic's text), and nothing written; a card and its configs/ copy are written
together or not at all."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import openrecipes

from openrecipes import atomic
from openrecipes.catalog.model_add import add_model

CONFIGS = Path(__file__).resolve().parents[1] / "models/configs"


def _edited(base: str, **changes) -> str:
    data = json.loads((CONFIGS / f"{base}.json").read_text(encoding="utf-8"))
    return json.dumps(data | changes)


QWEN_MOE_LAYERS = 48  # qwen3-30b-a3b
CANNOT_COUNT = {
    "mlp_only_layers-zero": (_edited("qwen3-30b-a3b", mlp_only_layers=0), "mlp_only_layers"),
    "mlp_only_layers-false": (_edited("qwen3-30b-a3b", mlp_only_layers=False), "mlp_only_layers"),
    "mlp_only_layers-mapping": (_edited("qwen3-30b-a3b", mlp_only_layers={}), "mlp_only_layers"),
    "mlp_only_layers-out-of-range": (_edited("qwen3-30b-a3b", mlp_only_layers=[QWEN_MOE_LAYERS]), "mlp_only_layers"),
    "mlp_only_layers-negative": (_edited("qwen3-30b-a3b", mlp_only_layers=[-1]), "mlp_only_layers"),
    "mlp_only_layers-twice": (_edited("qwen3-30b-a3b", mlp_only_layers=[3, 3]), "mlp_only_layers"),
    "mlp_only_layers-boolean": (_edited("qwen3-30b-a3b", mlp_only_layers=[True]), "mlp_only_layers"),
    "mlp_only_layers-every-layer": (_edited("qwen3-30b-a3b", mlp_only_layers=list(range(QWEN_MOE_LAYERS))),
                                    "mlp_only_layers"),
    "decoder_sparse_step-huge": (_edited("qwen3-30b-a3b", decoder_sparse_step=2**50), "decoder_sparse_step"),
    "decoder_sparse_step-zero": (_edited("qwen3-30b-a3b", decoder_sparse_step=0), "decoder_sparse_step"),
    "first_k_dense_replace-every-layer": (_edited("deepseek-v3", first_k_dense_replace=61), "first_k_dense_replace"),
    "sliding_window-1": (_edited("gpt-oss-20b", sliding_window=1), "sliding_window"),
    "sliding_window-0": (_edited("gpt-oss-20b", sliding_window=0), "sliding_window"),
    "sliding_window-true": (_edited("gpt-oss-20b", sliding_window=True), "sliding_window"),
    "sliding_window-fraction": (_edited("gpt-oss-20b", sliding_window=127.5), "sliding_window"),
    "layer_types-unknown": (_edited("gpt-oss-20b", layer_types=["sliding_attention", "chunked_attention"] * 12),
                            "layer_types"),
    "layer_types-irregular": (_edited("gpt-oss-20b", layer_types=["full_attention"] * 2
                                      + ["sliding_attention"] * 22), "layer_types"),
    "use_sliding_window-on-qwen3": (_edited("qwen3-8b", use_sliding_window=True, sliding_window=4096),
                                    "use_sliding_window"),
    "use_sliding_window-not-boolean": (_edited("qwen3-8b", use_sliding_window="yes"), "use_sliding_window"),
    "experts-on-a-dense-llama": (_edited("llama-3.1-8b", num_experts=8), "num_experts"),
    "another-familys-experts": (_edited("qwen3-30b-a3b", n_routed_experts=64), "n_routed_experts"),
    "topk-on-a-dense-qwen3": (_edited("qwen3-8b", num_experts_per_tok=2), "num_experts_per_tok"),
    "zero-experts": (_edited("qwen3-30b-a3b", num_experts=0), "num_experts"),
    "zero-topk": (_edited("qwen3-30b-a3b", num_experts_per_tok=0), "num_experts_per_tok"),
    "zero-hidden": (_edited("llama-3.1-8b", hidden_size=0), "hidden_size"),
    "zero-vocab": (_edited("llama-3.1-8b", vocab_size=0), "vocab_size"),
    "float-size": (_edited("llama-3.1-8b", hidden_size=4096.0), "hidden_size"),
    "text-size": (_edited("llama-3.1-8b", intermediate_size="14336"), "intermediate_size"),
    "boolean-size": (_edited("llama-3.1-8b", num_attention_heads=True), "num_attention_heads"),
    "boolean-experts": (_edited("mixtral-8x7b", num_local_experts=True), "num_local_experts"),
    "tie-as-text": (_edited("llama-3.1-8b", tie_word_embeddings="yes"), "tie_word_embeddings"),
    "negative-rank": (_edited("deepseek-v3", kv_lora_rank=-512), "kv_lora_rank"),
    "zero-q-rank": (_edited("deepseek-v3", q_lora_rank=0), "q_lora_rank"),
}


@pytest.mark.parametrize("case", sorted(CANNOT_COUNT))
def test_a_config_that_cannot_be_counted_is_one_line_naming_the_key_and_writes_nothing(tmp_path, case):
    text, key = CANNOT_COUNT[case]
    config = tmp_path / "config.json"
    config.write_text(text, encoding="utf-8")
    cards = tmp_path / "cards"
    cards.mkdir()
    result = openrecipes("model", "add", config, "--name", "x", "--out", cards / "x.yaml")
    assert result.returncode == 2, result.stdout
    assert result.stderr.count("\n") == 1 and f": {key}: " in result.stderr and "Traceback" not in result.stderr
    assert "validation error" not in result.stderr and len(result.stderr) < 400
    assert list(cards.iterdir()) == []


def test_the_counted_window_patterns_still_pass(tmp_path):
    every_third = ["sliding_attention", "sliding_attention", "full_attention"] * 8
    for name, text in (("alternating", _edited("gpt-oss-20b")),
                       ("every-third", _edited("gpt-oss-20b", layer_types=every_third)),
                       ("all-sliding", _edited("gpt-oss-20b", layer_types=["sliding_attention"] * 24)),
                       ("window-of-2", _edited("gpt-oss-20b", sliding_window=2)),
                       ("qwen3-window-off", _edited("qwen3-8b", use_sliding_window=False)),
                       ("some-dense-layers", _edited("qwen3-30b-a3b", mlp_only_layers=[0, 47]))):
        config = tmp_path / f"{name}.json"
        config.write_text(text, encoding="utf-8")
        result = openrecipes("model", "add", config, "--name", name, "--out", tmp_path / f"{name}.yaml")
        assert result.returncode == 0, (name, result.stderr)
    assert "window_attn_skip_freq: 3" in (tmp_path / "every-third.yaml").read_text(encoding="utf-8")


@pytest.mark.parametrize("name", ["x\n", "x\ny", "a/b", "../x", ".x", "-x", "X", "", " ", "a" * 101, "x y", "x\0",
                                  "é", "x.yaml\n", "\u202ex"])
def test_a_name_that_is_not_a_plain_slug_is_refused_before_anything_is_written(tmp_path, name):
    models = tmp_path / "models"
    models.mkdir()
    result = openrecipes("model", "add", CONFIGS / "qwen3-8b.json", "--name", name, "--out", models / "card.yaml")
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "--name" in result.stderr
    assert list(models.iterdir()) == [] and sorted(p.name for p in tmp_path.iterdir()) == ["models"]


def _card_write_fails(monkeypatch, out: Path) -> list[Path]:
    """Every write_atomic call from now on, in order; the one of the card at `out` fails as a full disk would."""
    real, calls = atomic.write_atomic, []

    def write(path, data, mode=None):
        calls.append(path)
        if path == out:
            raise OSError(28, "No space left on device", str(path))
        real(path, data, mode)

    monkeypatch.setattr(atomic, "write_atomic", write)
    return calls


def test_the_card_and_its_config_are_written_together_or_not_at_all(tmp_path, monkeypatch):
    out = tmp_path / "models/x.yaml"
    out.parent.mkdir()
    calls = _card_write_fails(monkeypatch, out)
    with pytest.raises(OSError):
        add_model(CONFIGS / "qwen3-8b.json", "x", out, None)
    assert calls == [out.parent / "configs/x.json", out]  # the config went first, and was taken back
    assert sorted(p.name for p in out.parent.iterdir()) == []


def test_a_failed_replacement_gives_the_earlier_config_its_bytes_back(tmp_path, monkeypatch):
    out = tmp_path / "x.yaml"
    add_model(CONFIGS / "qwen3-8b.json", "x", out, None)
    card, config = out.read_bytes(), (tmp_path / "configs/x.json").read_bytes()
    _card_write_fails(monkeypatch, out)
    with pytest.raises(OSError):
        add_model(CONFIGS / "mixtral-8x7b.json", "x", out, None)
    assert out.read_bytes() == card and (tmp_path / "configs/x.json").read_bytes() == config
