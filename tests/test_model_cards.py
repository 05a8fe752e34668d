"""Model cards derived from config.json (`openrecipes model add`): published totals come out exactly, every card in
models/ agrees with the config stored beside it, and a config it cannot derive a card from is refused on one line
without writing anything."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from conftest import openrecipes

from openrecipes.catalog.hardware import ModelCard
from openrecipes.catalog.hf_config import architecture_fields, card_data, counts, load_config, read_shape, sha256_of

REPO = Path(__file__).resolve().parents[1]
MODELS = REPO / "models"
CONFIGS = MODELS / "configs"
FIXTURES = REPO / "tests/fixtures/model_configs"
NEW_CARDS = ["llama-3.1-70b", "llama-3.1-405b", "qwen3-32b", "qwen3-30b-a3b", "qwen3-235b-a22b", "gpt-oss-120b",
             "deepseek-v3", "mixtral-8x7b"]


def derived(path: Path):
    _, data = load_config(path)
    return counts(path, data, read_shape(path, data))


def card(name: str) -> ModelCard:
    return ModelCard.model_validate(yaml.safe_load((MODELS / f"{name}.yaml").read_text(encoding="utf-8")))


def test_published_dense_totals_exactly():
    # Mistral AI and Meta publish these parameter counts for the checkpoints these configs describe.
    assert derived(FIXTURES / "mistral-7b-v0.1.json").total == 7_241_732_096
    assert derived(CONFIGS / "llama-3.1-8b.json").total == 8_030_261_248


def test_published_moe_totals():
    qwen = derived(CONFIGS / "qwen3-30b-a3b.json")
    assert round(qwen.total / 1e9, 1) == 30.5  # Qwen: 30.5B total, 3.3B activated
    assert abs(qwen.active - 3.3e9) < 0.1e9  # ours counts both embedding matrices: 3,353,032,704
    deepseek = derived(CONFIGS / "deepseek-v3.json")
    # DeepSeek: 671B total without the MTP module (which transformers does not build), 37B activated; its
    # README_WEIGHTS.md gives 36.6B activated including the 0.9B output head, i.e. without the input embedding.
    assert round(deepseek.total / 1e9) == 671
    assert round((deepseek.active - deepseek.embedding) / 1e9, 1) == 36.6
    assert round(deepseek.output_head / 1e9, 1) == 0.9
    # OpenAI: gpt-oss-120b 116.83B total, 5.13B active (matmul weights: no input embedding, norms or biases).
    gpt = derived(CONFIGS / "gpt-oss-120b.json")
    assert round(gpt.total / 1e9, 2) == 116.83 and round(gpt.active_matmul / 1e9, 2) == 5.13
    assert round(derived(CONFIGS / "mixtral-8x7b.json").active / 1e9, 1) == 12.9  # Mistral AI: 12.9B active
    kimi = derived(CONFIGS / "kimi-k2.json")  # Moonshot AI: 1T total, 32B activated (Kimi K2's model summary)
    assert round(kimi.total / 1e12, 2) == 1.03 and int(kimi.active / 1e9) == 32


@pytest.mark.parametrize("name", sorted(p.stem for p in CONFIGS.glob("*.json")))
def test_every_config_has_a_card_naming_it(name):
    config = card(name).config
    assert config is not None and config.file == f"configs/{name}.json"
    assert config.sha256 == sha256_of((CONFIGS / f"{name}.json").read_text(encoding="utf-8"))
    assert config.origin.startswith(("verbatim: ", "written from published values: "))


@pytest.mark.parametrize("name", NEW_CARDS)
def test_derived_cards_are_what_model_add_derives_now(name):
    path = CONFIGS / f"{name}.json"
    text, data = load_config(path)
    on_disk = yaml.safe_load((MODELS / f"{name}.yaml").read_text(encoding="utf-8"))
    origin = on_disk["config"]["origin"]
    shape = read_shape(path, data)
    again = card_data(name, shape, counts(path, data, shape), f"configs/{name}.json", sha256_of(text), origin)
    assert on_disk == again
    assert card(name).total_params == derived(path).total


HAND_KEYS = ("layers", "hidden_size", "ffn_hidden_size", "attention_heads", "query_groups", "kv_channels",
             "padded_vocab_size", "untied_embeddings", "qk_norm", "experts", "expert_ffn_hidden_size", "router_topk",
             "window_size", "window_attn_skip_freq")


@pytest.mark.parametrize("name", ["llama-3.1-8b", "qwen3-0.6b", "qwen3-1.7b", "qwen3-4b", "qwen3-8b", "qwen3-14b",
                                  "gpt-oss-20b"])
def test_hand_written_cards_agree_with_their_configs(name):
    hand = card(name)
    path = CONFIGS / f"{name}.json"
    _, data = load_config(path)
    arch = architecture_fields(read_shape(path, data))
    compared = [key for key in HAND_KEYS if key in hand.architecture and key in arch]
    assert {"layers", "hidden_size", "attention_heads", "padded_vocab_size", "untied_embeddings"} <= set(compared)
    assert {key: hand.architecture[key] for key in compared} == {key: arch[key] for key in compared}
    c = derived(path)
    if hand.total_params is not None:
        assert hand.total_params == c.total
    # A published active count stays as published: gpt-oss-20b's 3,607,142,400 (Hugging Face model page) is the
    # matmul weights a token uses, our active_matmul; the dense cards count every parameter.
    assert hand.active_params.count in (c.active, c.active_matmul)


def _config(tmp_path: Path, text: str, name: str = "config.json") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _edited(base: str, **changes) -> str:
    data = json.loads((CONFIGS / f"{base}.json").read_text(encoding="utf-8"))
    for key, value in changes.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    return json.dumps(data)


BAD = {
    "unknown-architecture": (_edited("llama-3.1-8b", model_type="mamba", architectures=["MambaForCausalLM"]),
                             "model_type"),
    "architecture-contradicts": (_edited("llama-3.1-8b", architectures=["Qwen3ForCausalLM"]), "architectures"),
    "missing-field": (_edited("llama-3.1-8b", num_hidden_layers=None), "num_hidden_layers"),
    "heads-do-not-divide": (_edited("mixtral-8x7b", num_attention_heads=48), "hidden_size"),
    "kv-groups-do-not-divide": (_edited("llama-3.1-8b", num_key_value_heads=5), "num_key_value_heads"),
    "topk-over-experts": (_edited("qwen3-30b-a3b", num_experts_per_tok=200), "num_experts_per_tok"),
    "negative": (_edited("llama-3.1-8b", hidden_size=-4096), "hidden_size"),
    "beyond-any-model": (_edited("llama-3.1-8b", hidden_size=2**50), "hidden_size"),
    "layers-beyond-walking": (_edited("qwen3-30b-a3b", num_hidden_layers=2**50), "num_hidden_layers"),
    "fraction": (_edited("llama-3.1-8b", vocab_size=128256.5), "vocab_size"),
    "boolean-count": (_edited("llama-3.1-8b", num_hidden_layers=True), "num_hidden_layers"),
    "nan": (_edited("llama-3.1-8b").replace('"rms_norm_eps": 1e-05', '"rms_norm_eps": NaN'), "NaN"),
    "infinite": (_edited("llama-3.1-8b").replace('"rms_norm_eps": 1e-05', '"rms_norm_eps": 1e999'), "rms_norm_eps"),
    "not-json": ("hidden_size: 4096\n", "not JSON"),
    "not-an-object": ("[1, 2, 3]", "top level"),
    "deep": ("[" * 10_000 + "]" * 10_000, "nested"),
    "too-many-dense-layers": (_edited("deepseek-v3", first_k_dense_replace=62), "first_k_dense_replace"),
    "layer-types-length": (_edited("gpt-oss-120b", layer_types=["full_attention"]), "layer_types"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_config_exits_2_naming_the_field_and_writes_nothing(tmp_path, case):
    text, field = BAD[case]
    out = tmp_path / "cards/x.yaml"
    out.parent.mkdir()
    result = openrecipes("model", "add", _config(tmp_path, text), "--name", "x", "--out", out)
    assert result.returncode == 2, result.stdout
    assert result.stderr.count("\n") == 1 and "config.json" in result.stderr and field in result.stderr
    assert list(out.parent.iterdir()) == []


def test_a_50_mb_config_is_refused(tmp_path):
    big = tmp_path / "config.json"
    with big.open("w") as handle:  # sparse: the reader stops after its 1 MiB limit, whatever follows
        handle.write('{"pad": "')
        handle.truncate(50 * 2**20)
    result = openrecipes("model", "add", big, "--name", "x", "--out", tmp_path / "x.yaml")
    assert result.returncode == 2 and "too large" in result.stderr
    assert not (tmp_path / "x.yaml").exists()


def test_add_writes_card_and_config_and_replaces_only_a_card(tmp_path):
    out = tmp_path / "x.yaml"
    result = openrecipes("model", "add", CONFIGS / "qwen3-30b-a3b.json", "--name", "x", "--out", out)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "configs/x.json").read_bytes() == (CONFIGS / "qwen3-30b-a3b.json").read_bytes()
    written = ModelCard.model_validate(yaml.safe_load(out.read_text(encoding="utf-8")))
    assert written.architecture["experts"] == 128 and written.total_params == 30_532_122_624
    again = openrecipes("model", "add", CONFIGS / "mixtral-8x7b.json", "--name", "x", "--out", out)
    assert again.returncode == 0, again.stderr  # a card is replaced
    assert "Mixtral" in out.read_text(encoding="utf-8")
    other = tmp_path / "notes.yaml"
    other.write_text("my notes\n", encoding="utf-8")
    refused = openrecipes("model", "add", CONFIGS / "mixtral-8x7b.json", "--name", "y", "--out", other)
    assert refused.returncode == 2 and "not a model card" in refused.stderr
    assert other.read_text(encoding="utf-8") == "my notes\n"
    twice = openrecipes("model", "add", CONFIGS / "mixtral-8x7b.json", "--name", "x", "--out", other)
    assert twice.returncode == 2 and "is already the card" in twice.stderr  # one name, one card
    assert other.read_text(encoding="utf-8") == "my notes\n"


def test_bad_name_is_refused(tmp_path):
    result = openrecipes("model", "add", CONFIGS / "qwen3-8b.json", "--name", "../Evil", "--out", tmp_path / "x.yaml")
    assert result.returncode == 2 and "--name" in result.stderr


@pytest.mark.parametrize("name", NEW_CARDS)
def test_the_planner_reads_every_derived_card(name):
    # The planner's own arithmetic (matmul weights and embeddings, no norms or biases) from the card's MLA ranks,
    # shared experts, dense layers and expert FFN size lands within 0.05% of the card's exact count.
    from openrecipes.plan.shape import model_shape

    derived_card = card(name)
    assert abs(model_shape(derived_card).total_params / derived_card.total_params - 1) < 5e-4


@pytest.mark.slow
def test_plan_for_a_derived_card_runs():
    result = openrecipes("plan", "deepseek-v3", "--gpu", "H100", "--gpus", "64", "--top", "1")
    assert result.returncode in (0, 2), result.stderr
    assert "Traceback" not in result.stderr and result.stderr.count("\n") <= 1
