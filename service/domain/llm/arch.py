"""What a model *is*, in the numbers serving depends on: :class:`ModelArch` and the parameter
and KV-cache arithmetic on it.

Parameter counts are *computed* from the shapes (:func:`param_counts`), never typed in; each
preset also records the publisher's headline count and the unit tests check the two agree within
3 %. :func:`check_arch` rejects internally inconsistent shapes with the offending field named.

Units: parameter counts in plain counts (``param_counts``) or billions (``*_b``); sizes in
elements; context in tokens. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from service.domain.errors import InvalidInput
from service.domain.hashing import field_hash
from service.domain.vocabulary import AttentionKind

__all__ = ["ModelArch", "ParamCounts", "check_arch", "param_counts"]


@dataclass(frozen=True, slots=True)
class ModelArch:
    """Architecture of a decoder-only transformer, as serving engines see it.

    Sizes are element counts; ``params_b``/``active_params_b`` are the publisher's headline
    counts in billions (for a custom or pasted model, our computed counts). Fields:

    * ``ffn_size``: intermediate size of the *dense* MLP (dense layers of an MoE model too;
      Llama 4 ``intermediate_size_mlp``). ``gated_mlp``: SwiGLU/GeGLU (3 matrices) or a plain
      GELU MLP (2 matrices: GPT-J, Falcon).
    * MoE: ``n_experts`` routed experts (0 = dense), ``experts_per_token`` (top-k),
      ``moe_ffn_size`` per expert, ``n_shared_experts`` of ``shared_expert_ffn_size`` (0 means
      ``moe_ffn_size``). MoE layers are the layers ``i >= first_k_dense_layers`` with
      ``(i - first_k_dense_layers + 1) % moe_layer_step == 0`` (DeepSeek-V3: first 3 dense;
      Llama 4 Maverick: every second layer).
    * MLA (DeepSeek): ``kv_lora_rank`` + ``qk_rope_head_dim`` elements of latent KV per token
      and layer; ``q_lora_rank``, ``qk_nope_head_dim``, ``v_head_dim`` size the projections.
    * ``sliding_window`` tokens on ``sliding_window_layers`` layers (Mistral v0.1, Gemma 2,
      Llama 4 chunked attention). The performance model limits those layers' attention reads
      and compute to the window, and their KV cache too in engines that allocate it so
      (``EngineProfile.window_kv``, ``service.domain.perfmodel.coefficients``).
    * ``ffn_only_quantized``: the published quantized checkpoint quantizes only the
      feed-forward weights of the inner layers; attention projections and the first and last
      layers stay 16-bit (Meta's Llama 3.1 FP8 release, as the Llama 3 paper's FP8 section
      describes). With weights under 16 bits, those parts are stored and multiplied in 16-bit.
    """

    id: str
    name: str
    params_b: float
    active_params_b: float
    n_layers: int
    hidden_size: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    ffn_size: int
    vocab_size: int
    max_context: int
    attention: AttentionKind = "gqa"
    tie_embeddings: bool = False
    gated_mlp: bool = True
    n_experts: int = 0
    experts_per_token: int = 0
    n_shared_experts: int = 0
    moe_ffn_size: int = 0
    shared_expert_ffn_size: int = 0
    first_k_dense_layers: int = 0
    moe_layer_step: int = 1
    kv_lora_rank: int = 0
    qk_rope_head_dim: int = 0
    q_lora_rank: int = 0
    qk_nope_head_dim: int = 0
    v_head_dim: int = 0
    sliding_window: int = 0
    sliding_window_layers: int = 0
    ffn_only_quantized: bool = False
    source: str = field(default="", compare=False)
    _hash: int = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", field_hash(self))

    def __hash__(self) -> int:  # memoised: the performance model's caches key on the model
        return self._hash

    @property
    def is_moe(self) -> bool:
        """True for a mixture-of-experts model (routed experts in some layers)."""
        return self.n_experts > 0

    @property
    def n_moe_layers(self) -> int:
        """Number of layers whose MLP is a routed-expert block."""
        if self.n_experts <= 0:
            return 0
        return max(0, self.n_layers - self.first_k_dense_layers) // max(1, self.moe_layer_step)

    @property
    def n_dense_layers(self) -> int:
        """Number of layers with a dense MLP."""
        return self.n_layers - self.n_moe_layers

    @property
    def kv_elements_per_token_layer(self) -> int:
        """KV-cache elements stored per token per layer, before tensor-parallel sharding.

        GQA/MHA: K and V, ``2 * n_kv_heads * head_dim``. MLA: the compressed latent plus the
        decoupled RoPE key, ``kv_lora_rank + qk_rope_head_dim`` (DeepSeek-V2 paper, sec. 2.1).
        """
        if self.attention == "mla":
            return self.kv_lora_rank + self.qk_rope_head_dim
        return 2 * self.n_kv_heads * self.head_dim


@dataclass(frozen=True, slots=True)
class ParamCounts:
    """Parameter counts (plain counts, not billions) split the way serving reads them.

    ``body`` holds every matrix multiplied per token except the LM head (attention, dense MLPs,
    routers, shared experts) excluding routed experts; ``experts_total``/``experts_active`` are the
    routed experts, all of them / top-k per token. ``embedding`` is the input table (gathered,
    not multiplied); ``lm_head`` the output projection (the same tensor when tied, counted once in
    ``total``).
    """

    total: float
    active: float
    embedding: float
    lm_head: float
    attention: float
    body: float
    experts_total: float
    experts_active: float


def _attention_params(a: ModelArch) -> float:
    """Attention projection parameters of one layer (MHA/GQA or MLA with LoRA-factored Q/KV)."""
    d = a.hidden_size
    if a.attention == "mla":
        qk = a.qk_nope_head_dim + a.qk_rope_head_dim
        q = (
            d * a.q_lora_rank + a.q_lora_rank * a.n_heads * qk
            if a.q_lora_rank
            else d * a.n_heads * qk
        )
        kv_a = d * (a.kv_lora_rank + a.qk_rope_head_dim)
        kv_b = a.kv_lora_rank * a.n_heads * (a.qk_nope_head_dim + a.v_head_dim)
        o = a.n_heads * a.v_head_dim * d
        return float(q + kv_a + kv_b + o)
    q = d * a.n_heads * a.head_dim
    kv = 2 * d * a.n_kv_heads * a.head_dim
    o = a.n_heads * a.head_dim * d
    return float(q + kv + o)


@lru_cache(maxsize=512)
def param_counts(a: ModelArch) -> ParamCounts:
    """Compute parameter counts from the architecture (norm weights and biases ignored: < 0.1 %).

    Dense MLP: ``3 * d * ffn`` (gated) or ``2 * d * ffn``. Expert: ``3 * d * moe_ffn``. Router:
    ``d * n_experts`` per MoE layer. Embedding ``vocab * d``; LM head the same unless tied.
    """
    d = a.hidden_size
    mlp_mats = 3 if a.gated_mlp else 2
    attn = _attention_params(a) * a.n_layers
    dense_mlp = float(mlp_mats * d * a.ffn_size * a.n_dense_layers)
    n_moe = a.n_moe_layers
    expert = 3.0 * d * a.moe_ffn_size
    shared_ffn = a.shared_expert_ffn_size or a.moe_ffn_size
    shared = float(3 * d * shared_ffn * a.n_shared_experts * n_moe)
    router = float(d * a.n_experts * n_moe)
    experts_total = expert * a.n_experts * n_moe
    experts_active = expert * a.experts_per_token * n_moe
    embedding = float(a.vocab_size * d)
    lm_head = embedding
    body = attn + dense_mlp + shared + router
    head_extra = 0.0 if a.tie_embeddings else lm_head
    total = body + experts_total + embedding + head_extra
    active = body + experts_active + embedding + head_extra
    return ParamCounts(
        total=total,
        active=active,
        embedding=embedding,
        lm_head=lm_head,
        attention=attn,
        body=body,
        experts_total=experts_total,
        experts_active=experts_active,
    )


def check_arch(a: ModelArch, *, prefix: str) -> None:
    """Reject internally inconsistent shapes with the offending field named.

    ``prefix`` is prepended to the field name (``"model."``, ``"hf_config."``).
    """
    if a.attention != "mla" and a.n_heads % a.n_kv_heads:
        raise InvalidInput(
            f"n_heads {a.n_heads} is not a multiple of n_kv_heads {a.n_kv_heads}",
            field=f"{prefix}n_kv_heads",
        )
    if a.n_kv_heads > a.n_heads:
        raise InvalidInput(
            f"n_kv_heads {a.n_kv_heads} exceeds n_heads {a.n_heads}", field=f"{prefix}n_kv_heads"
        )
    if a.n_experts and not 0 < a.experts_per_token <= a.n_experts:
        raise InvalidInput(
            f"experts_per_token {a.experts_per_token} must be in 1..{a.n_experts}",
            field=f"{prefix}experts_per_token",
        )
    if a.first_k_dense_layers >= a.n_layers and a.n_experts:
        raise InvalidInput(
            f"first_k_dense_layers {a.first_k_dense_layers} leaves no MoE layer",
            field=f"{prefix}first_k_dense_layers",
        )
    if a.attention == "mla" and (a.kv_lora_rank <= 0 or a.qk_rope_head_dim <= 0):
        raise InvalidInput(
            "MLA needs kv_lora_rank and qk_rope_head_dim", field=f"{prefix}kv_lora_rank"
        )
    if a.n_layers > 1000:
        raise InvalidInput(f"n_layers {a.n_layers} is implausible", field=f"{prefix}n_layers")
    if a.hidden_size > 262144:
        raise InvalidInput(
            f"hidden_size {a.hidden_size} is implausible", field=f"{prefix}hidden_size"
        )
