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
from service.domain.vocabulary import AttentionKind, Precision

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
    * ``experts_only_quantized``: the published quantized checkpoint quantizes only the routed
      experts; attention projections, the router and any dense or shared MLP stay 16-bit
      (gpt-oss: ``quantization_config.modules_to_not_convert`` names ``self_attn`` and
      ``mlp.router``). With weights under 16 bits, those parts are stored and multiplied in
      16-bit.
    * ``fp4_scale_block``: weights per 8-bit scale of the checkpoint's FP4 format: 16 for NVFP4
      (FP8 scales, 0.5625 bytes per weight), 32 for MXFP4 (power-of-two scales, 0.53125 bytes
      per weight: gpt-oss, ``quant_method: mxfp4``). Read only when the weights are planned in
      fp4.
    * ``checkpoint_precision``: the weight format of the publisher's own checkpoint (its
      ``config.json`` ``quantization_config``): what a request that names no precision plans
      with. ``bf16`` for 16-bit releases; DeepSeek-V3 and its successors publish block-FP8
      weights, gpt-oss MXFP4 experts.
    * Hybrid state-space models (NVIDIA Nemotron-H: Mamba-2, attention and MoE layers, each its
      own residual block): ``n_layers`` counts the MLP/MoE blocks, ``attention_layers`` the
      blocks with attention (``None``: every one of ``n_layers``, an ordinary transformer) and
      ``ssm_layers`` the Mamba-2 mixers, of ``ssm_heads`` heads of ``ssm_head_dim`` channels
      with a ``ssm_state_size`` state each, ``ssm_groups`` groups of B/C projections, a
      causal convolution of ``ssm_conv_kernel`` taps and prompts scanned in chunks of
      ``ssm_chunk_size`` tokens (0: Mamba-2's default, 256). Such a layer keeps a fixed-size
      state per sequence instead of a KV cache: ``ssm_state_elements`` recurrent plus
      ``ssm_conv_elements`` convolution elements, the recurrent one in fp32 when
      ``ssm_state_fp32`` (the checkpoint's ``mamba_ssm_cache_dtype``, which vLLM honours).
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
    experts_only_quantized: bool = False
    fp4_scale_block: int = 16
    checkpoint_precision: Precision = "bf16"
    attention_layers: int | None = None
    ssm_layers: int = 0
    ssm_heads: int = 0
    ssm_head_dim: int = 0
    ssm_state_size: int = 0
    ssm_groups: int = 0
    ssm_conv_kernel: int = 0
    ssm_chunk_size: int = 0
    ssm_state_fp32: bool = False
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
    def n_attention_layers(self) -> int:
        """Number of layers with attention (and a KV cache)."""
        return self.n_layers if self.attention_layers is None else self.attention_layers

    @property
    def n_sublayers(self) -> int:
        """Residual blocks: each attention, Mamba-2 mixer and MLP/MoE block ends in a residual
        add (and, under tensor parallelism, an all-reduce); ``2 n_layers`` for a transformer."""
        return self.n_attention_layers + self.ssm_layers + self.n_layers

    @property
    def ssm_inner(self) -> int:
        """Channels of one Mamba-2 mixer (``ssm_heads * ssm_head_dim``)."""
        return self.ssm_heads * self.ssm_head_dim

    @property
    def ssm_chunk(self) -> int:
        """Tokens per chunk of the Mamba-2 scan (``ssm_chunk_size``, 256 when unset)."""
        return self.ssm_chunk_size or 256

    @property
    def ssm_state_elements(self) -> int:
        """Recurrent state elements of one sequence in one Mamba-2 layer (``h * p * n``)."""
        return self.ssm_heads * self.ssm_head_dim * self.ssm_state_size

    @property
    def ssm_conv_elements(self) -> int:
        """Convolution state elements of one sequence in one Mamba-2 layer: the last
        ``conv_kernel - 1`` inputs of the convolved channels (x, B and C)."""
        conv_dim = self.ssm_inner + 2 * self.ssm_groups * self.ssm_state_size
        return conv_dim * max(self.ssm_conv_kernel - 1, 0)

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

    ``body`` holds every matrix multiplied per token except the LM head (attention, Mamba-2
    mixers, dense MLPs, routers, shared experts) excluding routed experts; ``ssm`` the mixers'
    share of it; ``experts_total``/``experts_active`` are the
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
    ssm: float = 0.0


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


def _ssm_params(a: ModelArch) -> float:
    """Mamba-2 mixer parameters of one layer: the input projection to x, z, B, C and the
    per-head step (``d (2 inner + 2 g n + h)``), the depthwise convolution over x, B and C, the
    output projection (``inner d``); per-head A, D and step bias (``3 h``)."""
    d, inner = a.hidden_size, a.ssm_inner
    bc = 2 * a.ssm_groups * a.ssm_state_size
    in_proj = d * (2 * inner + bc + a.ssm_heads)
    conv = (inner + bc) * a.ssm_conv_kernel
    return float(in_proj + conv + inner * d + 3 * a.ssm_heads)


@lru_cache(maxsize=512)
def param_counts(a: ModelArch) -> ParamCounts:
    """Compute parameter counts from the architecture (norm weights and biases ignored: < 0.1 %).

    Dense MLP: ``3 * d * ffn`` (gated) or ``2 * d * ffn``. Expert: ``3 * d * moe_ffn`` (2 for
    a plain MLP: Nemotron-H's squared-ReLU experts). Router: ``d * n_experts`` per MoE layer.
    Attention on ``n_attention_layers``, Mamba-2 mixers (:func:`_ssm_params`) on
    ``ssm_layers``. Embedding ``vocab * d``; LM head the same unless tied.
    """
    d = a.hidden_size
    mlp_mats = 3 if a.gated_mlp else 2
    attn = _attention_params(a) * a.n_attention_layers
    ssm = _ssm_params(a) * a.ssm_layers if a.ssm_layers else 0.0
    dense_mlp = float(mlp_mats * d * a.ffn_size * a.n_dense_layers)
    n_moe = a.n_moe_layers
    expert = float(mlp_mats) * d * a.moe_ffn_size
    shared_ffn = a.shared_expert_ffn_size or a.moe_ffn_size
    shared = float(mlp_mats * d * shared_ffn * a.n_shared_experts * n_moe)
    router = float(d * a.n_experts * n_moe)
    experts_total = expert * a.n_experts * n_moe
    experts_active = expert * a.experts_per_token * n_moe
    embedding = float(a.vocab_size * d)
    lm_head = embedding
    body = attn + ssm + dense_mlp + shared + router
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
        ssm=ssm,
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
    _check_hybrid(a, prefix)
    if a.n_layers > 1000:
        raise InvalidInput(f"n_layers {a.n_layers} is implausible", field=f"{prefix}n_layers")
    if a.hidden_size > 262144:
        raise InvalidInput(
            f"hidden_size {a.hidden_size} is implausible", field=f"{prefix}hidden_size"
        )


def _check_hybrid(a: ModelArch, prefix: str) -> None:
    """Attention and Mamba-2 layer counts and shapes of a hybrid model."""
    if a.attention_layers is not None and not 0 <= a.attention_layers <= 1000:
        raise InvalidInput(
            f"attention_layers {a.attention_layers} must be in 0..1000",
            field=f"{prefix}attention_layers",
        )
    if a.ssm_layers < 0 or a.ssm_layers > 1000:
        raise InvalidInput(
            f"ssm_layers {a.ssm_layers} must be in 0..1000", field=f"{prefix}ssm_layers"
        )
    if a.n_attention_layers == 0 and a.ssm_layers == 0:
        raise InvalidInput(
            "a model needs attention or Mamba-2 layers", field=f"{prefix}attention_layers"
        )
    if not a.ssm_layers:
        return
    for name in ("ssm_heads", "ssm_head_dim", "ssm_state_size", "ssm_groups", "ssm_conv_kernel"):
        if getattr(a, name) <= 0:
            raise InvalidInput(
                f"{name} must be positive with ssm_layers {a.ssm_layers}", field=f"{prefix}{name}"
            )
    if a.ssm_heads % a.ssm_groups:
        raise InvalidInput(
            f"ssm_heads {a.ssm_heads} is not a multiple of ssm_groups {a.ssm_groups}",
            field=f"{prefix}ssm_groups",
        )
