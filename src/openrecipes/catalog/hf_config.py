"""A Hugging Face config.json as a model card: the architecture families it knows (as data), the config read and
checked into a typed shape, the parameters counted, and the card that carries them.

The counts are those of the model transformers builds from the config (`AutoModelForCausalLM.from_config`) on
PyTorch's meta device, which allocates nothing: every nn.Parameter once, buffers left out (DeepSeek-V3's router score
bias is a buffer), a tied output head counted once, and no multi-token-prediction layer (transformers does not build
DeepSeek-V3's). Counting needs torch; reading a card does not (it stores the counts).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openrecipes.catalog.hardware import MAX_CONFIG_BYTES, ParameterCounts
from openrecipes.catalog.model import MAX_COUNT
from openrecipes.errors import UserError
from openrecipes.textfile import json_depth, read_text, shown

MAX_DEPTH = 32  # configs nest two or three levels (rope_scaling, quantization_config)
MAX_LAYERS = 1_000  # each layer is built (on the meta device); published models have a few hundred at most
NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,99}")  # a card's name and file stem: matched whole (fullmatch), no newline
# Every key a family spells its experts with: one a family does not read is a config of another architecture.
MOE_KEYS = ("num_experts", "num_local_experts", "n_routed_experts", "num_experts_per_tok", "moe_intermediate_size",
            "n_shared_experts", "first_k_dense_replace", "decoder_sparse_step", "mlp_only_layers")
LAYER_TYPES = ("full_attention", "sliding_attention")


@dataclass(frozen=True)
class MoeKeys:
    """Where a family's config spells its mixture-of-experts shape."""

    experts: str
    expert_ffn: str
    shared_experts: str | None = None  # each shared expert is one expert-sized FFN every token visits
    first_dense: str | None = None  # leading layers with a dense FFN instead
    sparse_step: bool = False  # Qwen-MoE's decoder_sparse_step and mlp_only_layers


@dataclass(frozen=True)
class Family:
    """One architecture as transformers builds it: which biases, norms and extras a layer has."""

    name: str
    architecture: str  # the class in `architectures`
    mla: bool = False  # multi-head latent attention (DeepSeek)
    attention_bias: bool | None = False  # on any attention projection (Qwen2: q, k and v); None: the config decides
    qk_norm: bool = False  # per-head RMSNorm on queries and keys (Qwen3)
    sinks: bool = False  # one learned attention sink per head (gpt-oss)
    window_key: str | None = None  # sliding window attention, where it is used
    moe: MoeKeys | None = None


FAMILIES: dict[str, Family] = {
    "llama": Family("Llama", "LlamaForCausalLM", attention_bias=None),
    "mistral": Family("Mistral", "MistralForCausalLM", window_key="sliding_window"),
    "qwen2": Family("Qwen2", "Qwen2ForCausalLM", attention_bias=True),
    "qwen3": Family("Qwen3", "Qwen3ForCausalLM", attention_bias=None, qk_norm=True),
    "qwen3_moe": Family("Qwen3-MoE", "Qwen3MoeForCausalLM", attention_bias=None, qk_norm=True,
                        moe=MoeKeys("num_experts", "moe_intermediate_size", sparse_step=True)),
    "mixtral": Family("Mixtral", "MixtralForCausalLM", window_key="sliding_window",
                      moe=MoeKeys("num_local_experts", "intermediate_size")),
    "deepseek_v3": Family("DeepSeek-V3", "DeepseekV3ForCausalLM", mla=True, attention_bias=None,
                          moe=MoeKeys("n_routed_experts", "moe_intermediate_size", shared_experts="n_shared_experts",
                                      first_dense="first_k_dense_replace")),
    "gpt_oss": Family("GPT-OSS", "GptOssForCausalLM", attention_bias=None, sinks=True,
                      window_key="sliding_window", moe=MoeKeys("num_local_experts", "intermediate_size")),
}
BY_ARCHITECTURE = {family.architecture: model_type for model_type, family in FAMILIES.items()}


# --- the shape read from a config -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Mla:
    q_lora_rank: int | None
    kv_lora_rank: int
    qk_nope_dim: int
    qk_rope_dim: int
    v_dim: int


@dataclass(frozen=True)
class Moe:
    experts: int
    topk: int
    expert_ffn: int
    shared_experts: int
    moe_layers: int


@dataclass(frozen=True)
class Shape:
    """The architecture figures a config.json fixes, checked against each other."""

    model_type: str
    family: Family
    layers: int
    hidden: int
    vocab: int
    tied: bool
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int | None  # dense FFN width; None when no layer is dense
    attention_bias: bool
    mla: Mla | None
    moe: Moe | None
    window: int | None  # sliding window in tokens (Hugging Face's count, the token itself included)
    windowed_layers: int

    @property
    def dense_layers(self) -> int:
        return self.layers - (self.moe.moe_layers if self.moe else 0)


class _Reader:
    """Reads fields of one config, each error naming the file and the field."""

    def __init__(self, path: Path, data: dict[str, Any]) -> None:
        self.path, self.data = path, data

    def fail(self, field: str, problem: str) -> UserError:
        return UserError(f"{shown(self.path)}: {field}: {problem}")

    def count(self, key: str, default: int | None = None, minimum: int = 1, maximum: int = MAX_COUNT) -> int:
        value = self.data.get(key, default)
        if value is None:
            raise self.fail(key, f"missing; add the model's {key} from its published config.json")
        if isinstance(value, bool) or not isinstance(value, int):  # 8.0 too: transformers builds no layer of 8.0
            raise self.fail(key, f"{value!r} is not a whole number; write it as an integer")
        if not minimum <= value <= maximum:
            raise self.fail(key, f"{value} is out of range; it must be between {minimum} and {maximum}")
        return value

    def flag(self, key: str, default: bool) -> bool:
        value = self.data.get(key, default)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.fail(key, f"{value!r} is not true or false; write true or false")
        return value

    def require(self, ok: bool, field: str, problem: str) -> None:
        if not ok:
            raise self.fail(field, problem)


def load_config(path: Path) -> tuple[str, dict[str, Any]]:
    """The config file's text and its JSON object: bounded in size and depth, numbers finite, nothing else accepted."""
    text = read_text(path, MAX_CONFIG_BYTES, "config.json")

    def no_constant(name: str) -> None:
        raise UserError(f"{shown(path)}: {name} is not a number a config may hold; write a finite number")

    if json_depth(text) > MAX_DEPTH:
        raise UserError(f"{shown(path)}: nested deeper than {MAX_DEPTH} levels; give the model's config.json itself")
    try:
        data = json.loads(text, parse_constant=no_constant)
    except json.JSONDecodeError as error:
        raise UserError(f"{shown(path)}:{error.lineno}: not JSON ({error.msg}); give the model's config.json"
                        ) from None
    except ValueError as error:  # a number of thousands of digits
        raise UserError(f"{shown(path)}: {error}; write the numbers of the model's config.json") from None
    if not isinstance(data, dict):
        raise UserError(f"{shown(path)}: the top level is not a JSON object; give the model's config.json")
    for key, value in data.items():
        if isinstance(value, float) and not math.isfinite(value):  # 1e999 parses to inf
            raise UserError(f"{shown(path)}: {key}: {value} is not finite; write a finite number")
    return text, data


def family_of(path: Path, data: dict[str, Any]) -> str:
    model_type = data.get("model_type")
    architectures = data.get("architectures")
    if architectures is not None and (not isinstance(architectures, list) or len(architectures) != 1
                                      or not isinstance(architectures[0], str)):
        raise UserError(f"{shown(path)}: architectures: expected a list of one class name such as "
                        "[\"LlamaForCausalLM\"]; write the model's class")
    if model_type is None and architectures:
        model_type = BY_ARCHITECTURE.get(architectures[0])
    if not isinstance(model_type, str) or model_type not in FAMILIES:
        raise UserError(f"{shown(path)}: model_type: {model_type!r} is not an architecture this catalog derives "
                        f"cards for; known: {', '.join(sorted(FAMILIES))}")
    if architectures and architectures[0] != FAMILIES[model_type].architecture:
        raise UserError(f"{shown(path)}: architectures: {architectures[0]} does not build model_type {model_type} "
                        f"(that is {FAMILIES[model_type].architecture}); fix one of the two")
    return model_type


def read_shape(path: Path, data: dict[str, Any]) -> Shape:
    model_type = family_of(path, data)
    family = FAMILIES[model_type]
    read = _Reader(path, data)
    layers, hidden = read.count("num_hidden_layers", maximum=MAX_LAYERS), read.count("hidden_size")
    heads = read.count("num_attention_heads")
    kv_heads = read.count("num_key_value_heads", heads)
    read.require(heads % kv_heads == 0, "num_key_value_heads",
                 f"{heads} attention heads do not split into {kv_heads} key/value groups; use a divisor of {heads}")
    if data.get("head_dim") is None:
        read.require(hidden % heads == 0, "hidden_size",
                     f"{hidden} is not divisible by num_attention_heads {heads} and no head_dim is given; add head_dim")
    head_dim = read.count("head_dim", hidden // heads)
    attention_bias = read.flag("attention_bias", False)
    mla = Mla(read.count("q_lora_rank") if data.get("q_lora_rank") is not None else None, read.count("kv_lora_rank"),
              read.count("qk_nope_head_dim"), read.count("qk_rope_head_dim"), read.count("v_head_dim")
              ) if family.mla else None
    _refuse_other_moe_keys(read, model_type, family)
    moe = _read_moe(read, family, layers) if family.moe else None
    dense = layers - (moe.moe_layers if moe else 0)
    window, windowed = _read_window(read, family, layers)
    shape = Shape(
        model_type=model_type, family=family, layers=layers, hidden=hidden, vocab=read.count("vocab_size"),
        tied=read.flag("tie_word_embeddings", False), heads=heads, kv_heads=kv_heads, head_dim=head_dim,
        ffn=read.count("intermediate_size") if dense else None,
        attention_bias=attention_bias if family.attention_bias is None else family.attention_bias,
        mla=mla, moe=moe, window=window, windowed_layers=windowed)
    read.flag("mlp_bias", False)  # refused here, naming the key, when not true or false (transformers reads it)
    return shape


def _read_moe(read: _Reader, family: Family, layers: int) -> Moe:
    keys = family.moe
    assert keys is not None
    experts, topk = read.count(keys.experts), read.count("num_experts_per_tok")
    read.require(topk <= experts, "num_experts_per_tok",
                 f"{topk} experts per token is more than the {experts} experts ({keys.experts}); lower it")
    dense_layers: set[int] = set()
    if keys.first_dense:
        first = read.count(keys.first_dense, 0, minimum=0)
        read.require(first <= layers, keys.first_dense, f"{first} dense layers is more than the {layers} layers")
        dense_layers = set(range(first))
    if keys.sparse_step:
        step = read.count("decoder_sparse_step", 1, maximum=layers)
        only = _layer_numbers(read, "mlp_only_layers", layers)
        dense_layers = set(only) | {i for i in range(layers) if (i + 1) % step}
    shared = read.count(keys.shared_experts, 0, minimum=0) if keys.shared_experts else 0
    moe_layers = layers - len(dense_layers)
    dense_keys = keys.first_dense or "mlp_only_layers and decoder_sparse_step"
    read.require(moe_layers > 0, keys.first_dense or "mlp_only_layers",
                 f"no layer of the {layers} has experts ({dense_keys} make every layer dense); a mixture of experts "
                 "needs at least one MoE layer")
    return Moe(experts=experts, topk=topk, expert_ffn=read.count(keys.expert_ffn), shared_experts=shared,
               moe_layers=moe_layers)


def _layer_numbers(read: _Reader, key: str, layers: int) -> list[int]:
    """A list of distinct layer numbers, each from 0 to layers - 1 ([] where the key is absent or null)."""
    value = read.data.get(key)
    if value is None:
        return []
    read.require(isinstance(value, list) and all(isinstance(i, int) and not isinstance(i, bool) for i in value),
                 key, f"{_short(value)} is not a list of layer numbers; write e.g. [] or [0, 3]")
    wrong = [i for i in value if not 0 <= i < layers]
    read.require(not wrong, key, f"layer {wrong[0] if wrong else 0} is not one of the {layers} layers (0 to "
                 f"{layers - 1}); fix the list or num_hidden_layers")
    read.require(len(set(value)) == len(value), key, "names a layer twice; list each layer once")
    return list(value)


def _refuse_other_moe_keys(read: _Reader, model_type: str, family: Family) -> None:
    """A mixture-of-experts key the family does not read: the config is of another architecture, and counting it
    as this one would leave its experts out."""
    keys = family.moe
    own = {"num_experts_per_tok"} if keys else set()
    if keys:
        own |= {keys.experts, keys.expert_ffn, keys.shared_experts or "", keys.first_dense or ""}
        own |= {"decoder_sparse_step", "mlp_only_layers"} if keys.sparse_step else set()
    for key in MOE_KEYS:
        if key not in own and read.data.get(key) not in (None, [], 0):
            raise read.fail(key, f"{_short(read.data[key])} is a mixture-of-experts setting that {model_type} "
                            f"({family.architecture}) does not read; fix model_type or remove the key")


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _read_window(read: _Reader, family: Family, layers: int) -> tuple[int | None, int]:
    if family.window_key is None:
        read.require(not read.flag("use_sliding_window", False), "use_sliding_window",
                     f"true, but a sliding window of {family.name} is not counted here; set it false or write the "
                     "card by hand")
        return None, 0
    if read.data.get(family.window_key) is None:
        return None, 0
    window = read.count(family.window_key)
    read.require(window >= 2, family.window_key, "1 attends to no token before the one it reads; a window is at least "
                 "2 tokens (the token itself included)")
    types = read.data.get("layer_types")
    if types is None:
        return window, layers
    read.require(isinstance(types, list) and len(types) == layers, "layer_types",
                 f"expected one entry per layer ({layers}); fix the list or num_hidden_layers")
    unknown = [kind for kind in types if kind not in LAYER_TYPES]
    read.require(not unknown, "layer_types", f"{_short(unknown[0] if unknown else '')} is not one of "
                 f"{', '.join(LAYER_TYPES)}")
    full = [i for i, kind in enumerate(types) if kind == "full_attention"]
    if full and len(full) < layers:
        # The card says "every k-th layer attends fully" (Megatron's window_attn_skip_freq): other patterns it
        # cannot state, so their FLOPs could not be counted exactly.
        every = layers // len(full)
        read.require(layers % len(full) == 0 and full == list(range(every - 1, layers, every)), "layer_types",
                     f"the full-attention layers {_short(full)} are not every k-th layer (k-1, 2k-1, ...); the card "
                     "counts only that pattern")
    return window, layers - len(full)


# --- the counts -----------------------------------------------------------------------------------------------------

TORCH_MISSING = ("counting a model's parameters needs torch (transformers builds the model on its meta device); "
                 "install its CPU build: pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu")
BEYOND = ("these sizes make {total} parameters, beyond any model (and exact arithmetic); check hidden_size, "
          "vocab_size, num_hidden_layers and the expert counts")


def meta_model(path: Path, data: dict[str, Any]) -> Any:
    """The model transformers builds from the config, on the meta device (shapes only, no memory)."""
    try:
        import torch
    except ImportError:
        raise UserError(TORCH_MISSING) from None
    import transformers

    transformers.logging.set_verbosity_error()
    architecture = {k: v for k, v in data.items() if k != "quantization_config"}  # storage format, not architecture
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            config = transformers.AutoConfig.for_model(**architecture)
            with torch.device("meta"):
                return transformers.AutoModelForCausalLM.from_config(config)
        except (RuntimeError, ValueError, TypeError, KeyError, OverflowError) as error:
            problem = str(error).splitlines()[0][:160] if str(error) else type(error).__name__
            raise UserError(f"{shown(path)}: transformers cannot build a model from it ({problem}); give the "
                            "model's config.json") from None


def _size(module: Any) -> int:
    return sum(p.numel() for p in module.parameters())


def _matmul_size(module: Any) -> int:
    """The weights of its matmuls: no biases (gpt-oss's fused expert biases are 2-D), norms or sinks (1-D)."""
    return sum(p.numel() for name, p in module.named_parameters() if p.dim() >= 2 and not name.endswith("bias"))


def counts(path: Path, data: dict[str, Any], shape: Shape) -> ParameterCounts:
    """The parameters of the model the config builds, in total, per part, and those a token uses: the routed experts
    a token does not visit are left out of the active counts (see the module docstring for what is counted). Not
    validated here: the card that carries them is."""
    least = shape.vocab * shape.hidden + shape.layers * shape.hidden  # the embedding and the layers' norms
    if least > MAX_COUNT:  # refused before building: a meta tensor this large cannot even be counted
        raise UserError(f"{shown(path)}: hidden_size: {BEYOND.format(total=f'at least {least:.3g}')}")
    model = meta_model(path, data)
    inner, total = model.model, _size(model)
    if total > MAX_COUNT:
        raise UserError(f"{shown(path)}: hidden_size: {BEYOND.format(total=f'{total:.3g}')}")
    embedding, first = _size(inner.embed_tokens), inner.layers[0]
    dense = next((layer for layer in inner.layers if not hasattr(layer.mlp, "experts")), None)
    moe = next((layer for layer in inner.layers if hasattr(layer.mlp, "experts")), None)
    active_matmul = embedding + sum(_matmul_size(layer) for layer in inner.layers)  # embedding: the output head's
    active = total
    router = expert = shared = moe_layer = moe_active = None
    if moe is not None and shape.moe:
        unvisited = shape.moe.experts - shape.moe.topk
        expert = _size(moe.mlp.experts) // shape.moe.experts
        active -= shape.moe.moe_layers * unvisited * expert
        active_matmul -= shape.moe.moe_layers * unvisited * (_matmul_size(moe.mlp.experts) // shape.moe.experts)
        shared_experts = getattr(moe.mlp, "shared_experts", None)
        shared = _size(shared_experts) if shared_experts is not None else 0
        router = _size(moe.mlp) - _size(moe.mlp.experts) - shared
        moe_layer = _size(moe)
        moe_active = moe_layer - unvisited * expert
    counted = ("every parameter transformers builds from the config, once (a tied output head is the embedding); "
               "buffers are not parameters")
    if shape.model_type == "deepseek_v3":
        counted += ("; the multi-token-prediction layer (num_nextn_predict_layers) is not counted: transformers does "
                    "not build it")
    return ParameterCounts.model_construct(
        total=total, active=active, active_matmul=active_matmul, embedding=embedding,
        output_head=0 if shape.tied else _size(model.lm_head), final_norm=_size(inner.norm),
        attention_per_layer=_size(first.self_attn),
        norms_per_layer=_size(first.input_layernorm) + _size(first.post_attention_layernorm),
        dense_mlp_per_layer=_size(dense.mlp) if dense is not None else None, router_per_layer=router,
        expert=expert, shared_experts_per_layer=shared,
        dense_layer=_size(dense) if dense is not None else None, moe_layer=moe_layer,
        moe_layer_active=moe_active, counted=counted)


# --- the card -------------------------------------------------------------------------------------------------------

def architecture_fields(shape: Shape) -> dict[str, Any]:
    """The card's architecture, in the keys the planner and engines read (Megatron's names); a key that does not
    apply to the shape (None below) is left out."""
    m, moe = shape.mla, shape.moe
    windowed = shape.windowed_layers if shape.window else 0
    full = shape.layers - windowed  # the layers that attend fully
    arch = {
        "hf_architecture": shape.family.architecture, "hf_model_type": shape.model_type, "layers": shape.layers,
        "hidden_size": shape.hidden, "ffn_hidden_size": shape.ffn, "attention_heads": shape.heads,
        # MLA has no key/value heads of its own: its shape is the latent ranks below
        "query_groups": None if m else shape.kv_heads, "kv_channels": None if m else shape.head_dim,
        "padded_vocab_size": shape.vocab, "untied_embeddings": not shape.tied, "qk_norm": shape.family.qk_norm,
        "attention_bias": shape.attention_bias,
        "attention": m and "multi-head latent attention (MLA)", "kv_lora_rank": m and m.kv_lora_rank,
        "qk_head_dim": m and m.qk_nope_dim, "qk_pos_emb_head_dim": m and m.qk_rope_dim, "v_head_dim": m and m.v_dim,
        "q_lora_rank": m and m.q_lora_rank, "attention_sinks": shape.family.sinks or None,
        "experts": moe and moe.experts, "expert_ffn_hidden_size": moe and moe.expert_ffn,
        "router_topk": moe and moe.topk, "shared_experts": moe and moe.shared_experts,
        "dense_layers": moe and shape.dense_layers,
        # Megatron's --window-size W attends W past tokens plus the token itself; Hugging Face counts the token.
        "window_size": shape.window - 1 if shape.window and windowed else None,
        "window_attn_skip_freq": round(shape.layers / full) if windowed and full else None}
    return {key: value for key, value in arch.items() if value is not None}


def card_data(name: str, shape: Shape, c: ParameterCounts, config_file: str, config_sha256: str, origin: str
              ) -> dict[str, Any]:
    routed = (f"; active: all but the {shape.moe.experts - shape.moe.topk} routed experts a token does not visit in "
              f"each of the {shape.moe.moe_layers} MoE layers" if shape.moe else "; dense: active = total")
    return {
        "name": name,
        "family": shape.family.name,
        "architecture": {"source": f"{config_file} ({origin})", **architecture_fields(shape)},
        "parameters": c.model_dump(exclude_none=True),
        "active_params": {"count": c.active, "source": f"derived from {config_file} by `openrecipes model add`"
                          f"{routed}; the input embedding is included", "revision": None},
        "total_params": c.total,
        "config": {"file": config_file, "sha256": config_sha256, "origin": origin},
        "notes": [f"Derived from the model's config.json; transformers {shape.family.architecture} built from it on "
                  "PyTorch's meta device has exactly total_params parameters."],
        "notes_source": "openrecipes model add",
    }


def sha256_of(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
