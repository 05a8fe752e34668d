"""A model card's architecture as the counts the planner needs: parameters, FLOPs and activation bytes per token.

Every figure comes from the card; a field the planner needs and the card lacks is an error naming the field
("unknown: <field>"), never a guess. All catalog models use gated FFNs (GLU: gate, up and down matrices).
"""

from __future__ import annotations

from dataclasses import dataclass

from openrecipes import figures
from openrecipes.catalog.hardware import ModelCard
from openrecipes.errors import UserError

GLU_MATRICES = 3  # gate, up, down


@dataclass(frozen=True)
class ModelShape:
    name: str
    layers: int
    hidden: int
    vocab: int
    untied_embeddings: bool
    attention_heads: int
    query_groups: int  # KV heads; MLA is counted as full multi-head (query_groups = heads)
    attention_params_per_layer: int
    attention_qkv_width: int  # q + k + v widths saved for the attention backward
    attention_out_width: int
    attention_score_width: int  # heads * (qk dim + v dim): the QK^T and AV matmul widths
    attention_latent_width: int  # MLA low-rank intermediates (0 for GQA)
    attention_window: int | None  # sliding window (tokens) on windowed layers
    windowed_layer_fraction: float
    sparse_attention_topk: int | None  # DSA: keys each query attends to
    dense_ffn: int | None
    dense_layers: int  # leading layers with a dense FFN (all of them for a dense model)
    experts: int
    expert_ffn: int
    router_topk: int
    shared_experts: int
    active_params: int  # the card's N (for MFU and 6N compute)
    norm_width: int  # elements per token one layer's RMSNorms normalize: the two layer norms, plus q and k norms

    def __hash__(self) -> int:
        # The planner's caches are keyed on shapes, hashed for every layout: the name, not all 23 fields (shapes that
        # compare equal share a name, so they still hash equal).
        return hash(self.name)

    @property
    def is_moe(self) -> bool:
        return self.experts > 0

    @property
    def moe_layers(self) -> int:
        return self.layers - self.dense_layers

    @property
    def embedding_params(self) -> int:
        return self.vocab * self.hidden

    @property
    def dense_mlp_params(self) -> int:
        return GLU_MATRICES * self.hidden * (self.dense_ffn or 0)

    @property
    def expert_params(self) -> int:
        """One routed expert's parameters."""
        return GLU_MATRICES * self.hidden * self.expert_ffn

    @property
    def moe_nonexpert_params(self) -> int:
        """Per MoE layer, parameters replicated like attention: the router and the shared experts."""
        return self.hidden * self.experts + self.shared_experts * self.expert_params

    @property
    def block_matmul_params(self) -> int:
        """Active parameters of the decoder layers' matmuls per token: attention, dense FFNs, and per MoE layer the
        router, the shared experts and the routed experts a token visits (no embedding, no output head)."""
        per_moe_layer = self.moe_nonexpert_params + self.router_topk * self.expert_params
        return (self.layers * self.attention_params_per_layer + self.dense_layers * self.dense_mlp_params
                + self.moe_layers * per_moe_layer)

    @property
    def total_params(self) -> int:
        embeddings = self.embedding_params * (2 if self.untied_embeddings else 1)
        per_moe_layer = self.experts * self.expert_params + self.moe_nonexpert_params
        return (embeddings + self.layers * self.attention_params_per_layer + self.dense_layers * self.dense_mlp_params
                + self.moe_layers * per_moe_layer)

    def attention_flops_per_token(self, row_tokens: int) -> float:
        """Training FLOPs of QK^T and AV per token over all layers (figures.attention_flops_per_token)."""
        return figures.attention_flops_per_token(self.layers, self.attention_score_width, row_tokens,
                                                 self.attention_window, self.windowed_layer_fraction,
                                                 self.sparse_attention_topk)

    def step_flops_per_token(self, row_tokens: int) -> float:
        """Model FLOPs per trained token: 6N for the matmuls (figures' definition) plus attention scores."""
        return figures.training_flops_per_token(self.active_params, self.attention_flops_per_token(row_tokens))


# One object per distinct shape, whichever request reads the card: the planner's caches are keyed on shapes, and a key
# that is the same object is found without comparing its fields.
_SHAPES: dict[ModelShape, ModelShape] = {}


def _field(arch: dict, name: str, card: str) -> int:
    if arch.get(name) is None:
        raise UserError(f"unknown: {name} (model card '{card}' lacks architecture.{name}; add it with its source)")
    return int(arch[name])


def model_shape(card: ModelCard) -> ModelShape:
    arch, name = card.architecture, card.name
    hidden, heads = _field(arch, "hidden_size", name), _field(arch, "attention_heads", name)
    if "kv_lora_rank" in arch:  # multi-head latent attention (DeepSeek / GLM-5)
        q_lora, kv_lora = _field(arch, "q_lora_rank", name), _field(arch, "kv_lora_rank", name)
        qk_dim, rope_dim, v_dim = (_field(arch, k, name) for k in ("qk_head_dim", "qk_pos_emb_head_dim", "v_head_dim"))
        qk_width = heads * (qk_dim + rope_dim)
        indexer = (arch.get("index_heads", 0) * arch.get("index_head_dim", 0) * q_lora
                   + hidden * arch.get("index_head_dim", 0) + hidden * arch.get("index_heads", 0))
        attention_params = (hidden * q_lora + q_lora * qk_width + hidden * (kv_lora + rope_dim)
                            + kv_lora * heads * (qk_dim + v_dim) + heads * v_dim * hidden + indexer)
        groups, qkv_width = heads, 2 * qk_width + heads * v_dim
        out_width, latent = heads * v_dim, q_lora + kv_lora + rope_dim
        qk_norm_width = 0  # MLA's latent norms are not per-head q/k norms
    else:
        groups, kv_channels = _field(arch, "query_groups", name), _field(arch, "kv_channels", name)
        q_width, kv_width = heads * kv_channels, groups * kv_channels
        attention_params = hidden * (q_width + 2 * kv_width) + q_width * hidden
        qkv_width, out_width, latent = q_width + 2 * kv_width, q_width, 0
        # architecture.qk_norm (Qwen3) adds per-head norms on queries and keys; cards without it have none.
        qk_norm_width = q_width + kv_width if arch.get("qk_norm") else 0
    experts = int(arch.get("experts") or 0)
    layers = _field(arch, "layers", name)
    window, windowed_fraction = figures.attention_window(arch)
    if "untied_embeddings" not in arch:
        raise UserError(f"unknown: untied_embeddings (model card '{name}' lacks architecture.untied_embeddings)")
    shape = ModelShape(
        name=name, layers=layers, hidden=hidden, vocab=_field(arch, "padded_vocab_size", name),
        untied_embeddings=bool(arch["untied_embeddings"]), attention_heads=heads, query_groups=groups,
        attention_params_per_layer=attention_params, attention_qkv_width=qkv_width, attention_out_width=out_width,
        attention_score_width=figures.attention_score_width(arch), attention_latent_width=latent,
        attention_window=window, windowed_layer_fraction=windowed_fraction,
        sparse_attention_topk=int(arch["index_topk"]) if arch.get("index_topk") else None,
        dense_ffn=_field(arch, "ffn_hidden_size", name) if (not experts or arch.get("dense_layers")) else None,
        dense_layers=int(arch.get("dense_layers") or 0) if experts else layers, experts=experts,
        expert_ffn=_field(arch, "expert_ffn_hidden_size", name) if experts else 0,
        router_topk=_field(arch, "router_topk", name) if experts else 0,
        shared_experts=int(arch.get("shared_experts") or 0), active_params=card.active_params.count,
        norm_width=2 * hidden + qk_norm_width)
    return _SHAPES.setdefault(shape, shape)
