"""The card's counts against the real architecture: transformers builds the model from the same config on PyTorch's
meta device (no memory, as accelerate's memory estimator does) and its parameters are counted, in total and per part.
Tiny configs of each architecture family (every branch of the arithmetic), then every config in models/configs/
(each under half a second once transformers is imported)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from openrecipes.catalog.hf_config import Counts, counts, load_config, read_shape

REPO = Path(__file__).resolve().parents[1]
CONFIGS = REPO / "models/configs"


def meta_model(data: dict):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    transformers.logging.set_verbosity_error()
    data = {k: v for k, v in data.items() if k != "quantization_config"}  # storage format, not architecture
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        config = transformers.AutoConfig.for_model(**data)
        with torch.device("meta"):
            return transformers.AutoModelForCausalLM.from_config(config)


def size(module) -> int:
    return sum(p.numel() for p in module.parameters())


def assert_parts(model, ours: Counts, data: dict) -> None:
    assert size(model) == ours.total
    inner = model.model
    assert size(inner.embed_tokens) == ours.embedding
    assert size(inner.norm) == ours.final_norm
    for layer in inner.layers:
        assert size(layer.self_attn) == ours.attention_per_layer
        assert size(layer.input_layernorm) + size(layer.post_attention_layernorm) == ours.norms_per_layer
        mlp = layer.mlp
        if hasattr(mlp, "experts"):
            assert size(layer) == ours.moe_layer
            assert size(mlp.experts) == data_experts(data) * ours.expert
        else:
            assert size(layer) == ours.dense_layer and size(mlp) == ours.dense_mlp_per_layer


def data_experts(data: dict) -> int:
    return next(data[k] for k in ("num_experts", "num_local_experts", "n_routed_experts") if k in data)


def check(path: Path, data: dict | None = None) -> None:
    if data is None:
        _, data = load_config(path)
    assert_parts(meta_model(data), counts(read_shape(path, data)), data)


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
def test_tiny_models_of_each_family_match_transformers(tmp_path, family):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(TINY[family]), encoding="utf-8")
    check(path, TINY[family])


@pytest.mark.parametrize("name", sorted(p.stem for p in CONFIGS.glob("*.json")))
def test_every_stored_config_matches_transformers(name):
    check(CONFIGS / f"{name}.json")
