"""The counts `openrecipes model add` takes from transformers' model on PyTorch's meta device: for a tiny config of
each architecture family (every kind of layer), the parts add up to the total and the active counts leave out exactly
the routed experts a token does not visit; a model add without torch says in one line how to install it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from openrecipes.catalog.hf_config import TORCH_MISSING, counts, load_config, read_shape
from openrecipes.errors import UserError

REPO = Path(__file__).resolve().parents[1]
CONFIGS = REPO / "models/configs"


def tiny(name: str, folder: Path = CONFIGS, **changes) -> dict:
    """The stored config of a model with small dimensions: the same architecture family, built in milliseconds."""
    data = json.loads((folder / f"{name}.json").read_text(encoding="utf-8"))
    return data | changes


SMALL = {"hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4,
         "num_key_value_heads": 2, "vocab_size": 100}
MLA = {**SMALL, "moe_intermediate_size": 32, "num_hidden_layers": 3, "first_k_dense_replace": 1,
       "num_key_value_heads": 4, "n_routed_experts": 8, "num_experts_per_tok": 2, "n_group": 2, "topk_group": 1,
       "q_lora_rank": 24, "kv_lora_rank": 16, "qk_nope_head_dim": 8, "qk_rope_head_dim": 4, "v_head_dim": 8}


TINY = {
    "dense-llama": tiny("llama-3.1-8b", **SMALL, mlp_bias=True, attention_bias=True),
    "dense-mistral": tiny("mistral-7b-v0.1", REPO / "tests/fixtures/model_configs", **SMALL),
    "dense-qwen2": tiny("qwen3-8b", **SMALL, head_dim=16, model_type="qwen2", architectures=["Qwen2ForCausalLM"]),
    "dense-qwen3-tied": tiny("qwen3-0.6b", **SMALL, head_dim=16, attention_bias=True),
    "moe-mixtral": tiny("mixtral-8x7b", **SMALL, num_local_experts=4),
    "moe-qwen3": tiny("qwen3-30b-a3b", hidden_size=64, intermediate_size=96, moe_intermediate_size=32,
                      num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2, head_dim=16, num_experts=6,
                      num_experts_per_tok=2, vocab_size=100, decoder_sparse_step=1, mlp_only_layers=[1]),
    "mla-deepseek": tiny("deepseek-v3", **MLA),
    "mla-deepseek-no-q-lora-with-bias": tiny("deepseek-v3", **MLA | {"q_lora_rank": None, "attention_bias": True,
                                                                     "n_shared_experts": 2}),
    "moe-gpt-oss": tiny("gpt-oss-20b", hidden_size=64, intermediate_size=32, num_hidden_layers=2,
                        layer_types=["sliding_attention", "full_attention"], num_attention_heads=4,
                        num_key_value_heads=2, head_dim=16, num_local_experts=4, vocab_size=100, pad_token_id=0),
}


@pytest.mark.parametrize("family", sorted(TINY))
def test_the_parts_of_each_family_add_up(tmp_path, family):
    pytest.importorskip("torch")
    path = tmp_path / "config.json"
    path.write_text(json.dumps(TINY[family]), encoding="utf-8")
    _, data = load_config(path)
    shape = read_shape(path, data)
    c = counts(path, data, shape)
    moe_layers = shape.moe.moe_layers if shape.moe else 0
    layers = shape.dense_layers * (c.dense_layer or 0) + moe_layers * (c.moe_layer or 0)
    assert c.total == c.embedding + c.output_head + c.final_norm + layers
    assert (c.output_head == 0) == shape.tied
    if shape.moe:
        assert c.expert and c.moe_layer and c.moe_layer_active and c.router_per_layer is not None
        assert c.moe_layer == (c.attention_per_layer + c.norms_per_layer + c.router_per_layer
                               + shape.moe.experts * c.expert + (c.shared_experts_per_layer or 0))
        assert c.total - c.active == moe_layers * (shape.moe.experts - shape.moe.topk) * c.expert
        assert c.moe_layer - c.moe_layer_active == (shape.moe.experts - shape.moe.topk) * c.expert
    else:
        assert c.active == c.total and c.dense_layer == c.attention_per_layer + c.norms_per_layer + (
            c.dense_mlp_per_layer or 0)
    # The matmul weights a token uses: the output head's (the embedding's size), none of the norms.
    assert c.embedding <= c.active_matmul < c.active - c.final_norm - moe_layers * c.norms_per_layer


def test_model_add_without_torch_says_how_to_install_it(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` raises ImportError
    path = CONFIGS / "qwen3-8b.json"
    _, data = load_config(path)
    with pytest.raises(UserError) as error:
        counts(path, data, read_shape(path, data))
    assert str(error.value) == TORCH_MISSING and "\n" not in TORCH_MISSING and "pip install torch==2.13.0" in str(
        error.value)
