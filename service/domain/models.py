"""LLM architecture presets and parsing: what a model *is*, in the numbers serving depends on.

A :class:`ModelArch` holds the shapes a serving engine allocates and reads: layers, hidden size,
attention heads (MHA / GQA / MLA), MLP and expert sizes, vocabulary. Parameter counts are
*computed* from those shapes (:func:`param_counts`), never typed in; each preset also records the
publisher's headline count (``params_b``, ``active_params_b``) and the unit tests check the two
agree within 3 %.

:func:`resolve_model` accepts three forms and returns the architecture plus every assumption
made on the way:

* a preset id or alias (``"llama-3.1-70b"``, ``"meta-llama/Llama-3.1-70B-Instruct"``,
  ``"Mixtral-8x7B"``), matched case-insensitively;
* ``{"params_b": 70, ...}``: a size plus any architecture fields we know; the rest is derived
  with stated rules (layers and hidden size from a power-law fit over the dense presets, GQA with
  8 KV heads, head_dim 128, a SwiGLU MLP of about 3.5 x hidden);
* ``{"hf_config": {...}}``: a Hugging Face ``config.json`` pasted as-is (Llama, Mistral, Mixtral,
  Qwen2/Qwen3/Qwen3-MoE, Gemma 2, GPT-J, Falcon, DeepSeek-V3 MLA, Llama 4 ``text_config``).

Units: parameter counts in billions (``*_b``) or plain counts (``param_counts``); sizes in
elements; context in tokens. Pure: no I/O.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

from service.domain.errors import InvalidInput, UnknownModel
from service.domain.vocabulary import AttentionKind

__all__ = [
    "PRESETS",
    "AttentionKind",
    "ModelArch",
    "ParamCounts",
    "ResolvedModel",
    "param_counts",
    "preset_ids",
    "resolve_model",
]


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
      Llama 4 chunked attention). Recorded; the performance model does not shrink KV for it
      (see ``service.domain.perfmodel``), which is conservative.
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
    source: str = field(default="", compare=False)

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


@dataclass(frozen=True, slots=True)
class ResolvedModel:
    """A model architecture plus every assumption made while resolving the input."""

    arch: ModelArch
    assumptions: tuple[str, ...] = ()


# --------------------------------------------------------------------------------------------
# Presets. Each value is read from the model's Hugging Face config.json (path in `source`);
# `params_b`/`active_params_b` are the publisher's headline counts (model card / safetensors
# metadata). Values were cross-checked against copies of these configs in public repositories
# found with the project's code search (e.g. NVIDIA/TensorRT-LLM tests for Llama 4 Maverick).
# --------------------------------------------------------------------------------------------


def _llama(
    id_: str,
    name: str,
    params_b: float,
    layers: int,
    hidden: int,
    heads: int,
    kv: int,
    ffn: int,
    vocab: int,
    ctx: int,
    source: str,
) -> ModelArch:
    """A dense Llama-family preset (SwiGLU MLP, head_dim = hidden / heads)."""
    return ModelArch(
        id=id_,
        name=name,
        params_b=params_b,
        active_params_b=params_b,
        n_layers=layers,
        hidden_size=hidden,
        n_heads=heads,
        n_kv_heads=kv,
        head_dim=hidden // heads,
        ffn_size=ffn,
        vocab_size=vocab,
        max_context=ctx,
        attention="mha" if kv == heads else "gqa",
        source=source,
    )


_PRESET_LIST: tuple[ModelArch, ...] = (
    # huggingface.co/meta-llama/Llama-2-7b-hf/config.json
    _llama("llama-2-7b", "Llama 2 7B", 6.74, 32, 4096, 32, 32, 11008, 32000, 4096,
           "hf:meta-llama/Llama-2-7b-hf/config.json"),
    # huggingface.co/meta-llama/Llama-2-13b-hf/config.json
    _llama("llama-2-13b", "Llama 2 13B", 13.0, 40, 5120, 40, 40, 13824, 32000, 4096,
           "hf:meta-llama/Llama-2-13b-hf/config.json"),
    # huggingface.co/meta-llama/Llama-2-70b-hf/config.json
    _llama("llama-2-70b", "Llama 2 70B", 69.0, 80, 8192, 64, 8, 28672, 32000, 4096,
           "hf:meta-llama/Llama-2-70b-hf/config.json"),
    # huggingface.co/meta-llama/Meta-Llama-3-8B/config.json
    _llama("llama-3-8b", "Llama 3 8B", 8.03, 32, 4096, 32, 8, 14336, 128256, 8192,
           "hf:meta-llama/Meta-Llama-3-8B/config.json"),
    # huggingface.co/meta-llama/Meta-Llama-3-70B/config.json
    _llama("llama-3-70b", "Llama 3 70B", 70.6, 80, 8192, 64, 8, 28672, 128256, 8192,
           "hf:meta-llama/Meta-Llama-3-70B/config.json"),
    # huggingface.co/meta-llama/Llama-3.1-8B/config.json
    _llama("llama-3.1-8b", "Llama 3.1 8B", 8.03, 32, 4096, 32, 8, 14336, 128256, 131072,
           "hf:meta-llama/Llama-3.1-8B/config.json"),
    # huggingface.co/meta-llama/Llama-3.1-70B/config.json
    _llama("llama-3.1-70b", "Llama 3.1 70B", 70.6, 80, 8192, 64, 8, 28672, 128256, 131072,
           "hf:meta-llama/Llama-3.1-70B/config.json"),
    # huggingface.co/meta-llama/Llama-3.3-70B-Instruct/config.json (same shapes as 3.1 70B)
    _llama("llama-3.3-70b", "Llama 3.3 70B", 70.6, 80, 8192, 64, 8, 28672, 128256, 131072,
           "hf:meta-llama/Llama-3.3-70B-Instruct/config.json"),
    # huggingface.co/meta-llama/Llama-3.1-405B/config.json
    _llama("llama-3.1-405b", "Llama 3.1 405B", 405.9, 126, 16384, 128, 8, 53248, 128256, 131072,
           "hf:meta-llama/Llama-3.1-405B/config.json"),
    # huggingface.co/mistralai/Mistral-7B-v0.1/config.json (sliding_window 4096)
    replace(
        _llama("mistral-7b", "Mistral 7B", 7.24, 32, 4096, 32, 8, 14336, 32000, 32768,
               "hf:mistralai/Mistral-7B-v0.1/config.json"),
        sliding_window=4096,
        sliding_window_layers=32,
    ),
    # huggingface.co/mistralai/Mixtral-8x7B-v0.1/config.json
    ModelArch(
        id="mixtral-8x7b", name="Mixtral 8x7B", params_b=46.7, active_params_b=12.9,
        n_layers=32, hidden_size=4096, n_heads=32, n_kv_heads=8, head_dim=128, ffn_size=14336,
        vocab_size=32000, max_context=32768, n_experts=8, experts_per_token=2,
        moe_ffn_size=14336, source="hf:mistralai/Mixtral-8x7B-v0.1/config.json",
    ),
    # huggingface.co/mistralai/Mixtral-8x22B-v0.1/config.json
    ModelArch(
        id="mixtral-8x22b", name="Mixtral 8x22B", params_b=141.0, active_params_b=39.0,
        n_layers=56, hidden_size=6144, n_heads=48, n_kv_heads=8, head_dim=128, ffn_size=16384,
        vocab_size=32000, max_context=65536, n_experts=8, experts_per_token=2,
        moe_ffn_size=16384, source="hf:mistralai/Mixtral-8x22B-v0.1/config.json",
    ),
    # huggingface.co/Qwen/Qwen2.5-7B/config.json (use_sliding_window false; qkv bias ignored)
    _llama("qwen2.5-7b", "Qwen2.5 7B", 7.61, 28, 3584, 28, 4, 18944, 152064, 32768,
           "hf:Qwen/Qwen2.5-7B/config.json"),
    # huggingface.co/Qwen/Qwen2.5-72B/config.json
    _llama("qwen2.5-72b", "Qwen2.5 72B", 72.7, 80, 8192, 64, 8, 29568, 152064, 32768,
           "hf:Qwen/Qwen2.5-72B/config.json"),
    # huggingface.co/Qwen/Qwen3-30B-A3B/config.json
    ModelArch(
        id="qwen3-30b-a3b", name="Qwen3 30B-A3B", params_b=30.5, active_params_b=3.3,
        n_layers=48, hidden_size=2048, n_heads=32, n_kv_heads=4, head_dim=128, ffn_size=6144,
        vocab_size=151936, max_context=40960, n_experts=128, experts_per_token=8,
        moe_ffn_size=768, source="hf:Qwen/Qwen3-30B-A3B/config.json",
    ),
    # huggingface.co/Qwen/Qwen3-235B-A22B/config.json
    ModelArch(
        id="qwen3-235b-a22b", name="Qwen3 235B-A22B", params_b=235.0, active_params_b=22.0,
        n_layers=94, hidden_size=4096, n_heads=64, n_kv_heads=4, head_dim=128, ffn_size=12288,
        vocab_size=151936, max_context=40960, n_experts=128, experts_per_token=8,
        moe_ffn_size=1536, source="hf:Qwen/Qwen3-235B-A22B/config.json",
    ),
    # huggingface.co/deepseek-ai/DeepSeek-V3/config.json (MTP module excluded: 671B main model)
    ModelArch(
        id="deepseek-v3", name="DeepSeek-V3", params_b=671.0, active_params_b=37.0,
        n_layers=61, hidden_size=7168, n_heads=128, n_kv_heads=128, head_dim=128,
        ffn_size=18432, vocab_size=129280, max_context=163840, attention="mla",
        n_experts=256, experts_per_token=8, n_shared_experts=1, moe_ffn_size=2048,
        first_k_dense_layers=3, kv_lora_rank=512, qk_rope_head_dim=64, q_lora_rank=1536,
        qk_nope_head_dim=128, v_head_dim=128,
        source="hf:deepseek-ai/DeepSeek-V3/config.json",
    ),
    # huggingface.co/meta-llama/Llama-4-Scout-17B-16E/config.json (text_config; chunked
    # attention of 8192 tokens on 3 of 4 layers)
    ModelArch(
        id="llama-4-scout", name="Llama 4 Scout 17B-16E", params_b=109.0, active_params_b=17.0,
        n_layers=48, hidden_size=5120, n_heads=40, n_kv_heads=8, head_dim=128, ffn_size=16384,
        vocab_size=202048, max_context=10485760, n_experts=16, experts_per_token=1,
        n_shared_experts=1, moe_ffn_size=8192, sliding_window=8192, sliding_window_layers=36,
        source="hf:meta-llama/Llama-4-Scout-17B-16E/config.json",
    ),
    # huggingface.co/meta-llama/Llama-4-Maverick-17B-128E/config.json (interleave_moe_layer_step
    # 2; dense layers use intermediate_size_mlp 16384)
    ModelArch(
        id="llama-4-maverick", name="Llama 4 Maverick 17B-128E", params_b=400.0,
        active_params_b=17.0, n_layers=48, hidden_size=5120, n_heads=40, n_kv_heads=8,
        head_dim=128, ffn_size=16384, vocab_size=202048, max_context=1048576, n_experts=128,
        experts_per_token=1, n_shared_experts=1, moe_ffn_size=8192, moe_layer_step=2,
        sliding_window=8192, sliding_window_layers=36,
        source="hf:meta-llama/Llama-4-Maverick-17B-128E/config.json",
    ),
    # huggingface.co/EleutherAI/gpt-j-6b/config.json (n_inner null -> 4 * n_embd; GELU MLP)
    ModelArch(
        id="gpt-j-6b", name="GPT-J 6B", params_b=6.05, active_params_b=6.05, n_layers=28,
        hidden_size=4096, n_heads=16, n_kv_heads=16, head_dim=256, ffn_size=16384,
        vocab_size=50400, max_context=2048, attention="mha", gated_mlp=False,
        source="hf:EleutherAI/gpt-j-6b/config.json",
    ),
    # huggingface.co/tiiuae/falcon-180B/config.json (new_decoder_architecture, 8 KV heads,
    # 4 x hidden GELU MLP, tied embeddings)
    ModelArch(
        id="falcon-180b", name="Falcon 180B", params_b=180.0, active_params_b=180.0,
        n_layers=80, hidden_size=14848, n_heads=232, n_kv_heads=8, head_dim=64, ffn_size=59392,
        vocab_size=65024, max_context=2048, gated_mlp=False, tie_embeddings=True,
        source="hf:tiiuae/falcon-180B/config.json",
    ),
    # huggingface.co/google/gemma-2-27b/config.json (sliding window 4096 on alternate layers)
    ModelArch(
        id="gemma-2-27b", name="Gemma 2 27B", params_b=27.2, active_params_b=27.2, n_layers=46,
        hidden_size=4608, n_heads=32, n_kv_heads=16, head_dim=128, ffn_size=36864,
        vocab_size=256000, max_context=8192, tie_embeddings=True, sliding_window=4096,
        sliding_window_layers=23, source="hf:google/gemma-2-27b/config.json",
    ),
)  # fmt: skip

PRESETS: dict[str, ModelArch] = {m.id: m for m in _PRESET_LIST}

# Explicit aliases (normalised form -> preset id). Normalisation (see `_normalise`) already
# strips an organisation prefix, case, "-instruct"/"-hf"/"-chat"/"-base"/"-it" and quantisation
# suffixes, so only genuinely different spellings are listed.
_ALIASES: dict[str, str] = {
    "llama2-7b": "llama-2-7b",
    "llama2-13b": "llama-2-13b",
    "llama2-70b": "llama-2-70b",
    "meta-llama-3-8b": "llama-3-8b",
    "meta-llama-3-70b": "llama-3-70b",
    "llama3-8b": "llama-3-8b",
    "llama3-70b": "llama-3-70b",
    "meta-llama-3.1-8b": "llama-3.1-8b",
    "meta-llama-3.1-70b": "llama-3.1-70b",
    "meta-llama-3.1-405b": "llama-3.1-405b",
    "llama3.1-8b": "llama-3.1-8b",
    "llama3.1-70b": "llama-3.1-70b",
    "llama3.1-405b": "llama-3.1-405b",
    "llama3.3-70b": "llama-3.3-70b",
    "llama-3-405b": "llama-3.1-405b",
    "mistral-7b-v0.1": "mistral-7b",
    "mixtral-8x7b-v0.1": "mixtral-8x7b",
    "mixtral-8x22b-v0.1": "mixtral-8x22b",
    "qwen3-30b": "qwen3-30b-a3b",
    "qwen3-235b": "qwen3-235b-a22b",
    "deepseek-v3-0324": "deepseek-v3",
    "deepseek-r1": "deepseek-v3",
    "deepseek-r1-0528": "deepseek-v3",
    "llama-4-scout-17b-16e": "llama-4-scout",
    "llama-4-maverick-17b-128e": "llama-4-maverick",
    "llama4-scout": "llama-4-scout",
    "llama4-maverick": "llama-4-maverick",
    "gpt-j": "gpt-j-6b",
    "gptj-6b": "gpt-j-6b",
    "falcon-180b-chat": "falcon-180b",
    "gemma2-27b": "gemma-2-27b",
}

_STRIP_SUFFIXES = (
    "instruct",
    "chat",
    "hf",
    "base",
    "it",
    "fp8",
    "fp4",
    "nvfp4",
    "awq",
    "gptq",
    "int4",
    "int8",
    "bf16",
    "fp16",
    "original",
    "dynamic",
)


def _normalise(name: str) -> str:
    """Lower-case, drop an ``org/`` prefix, unify separators, strip instruct/quant suffixes."""
    s = name.strip().lower()
    if "/" in s:
        s = s.rsplit("/", 1)[1]
    s = re.sub(r"[\s_]+", "-", s)
    changed = True
    while changed:
        changed = False
        for suf in _STRIP_SUFFIXES:
            if s.endswith("-" + suf):
                s = s[: -len(suf) - 1]
                changed = True
    # "-instruct-v0.1" style: a trailing version after a stripped suffix
    m = re.fullmatch(r"(.*)-instruct-(v[\d.]+)", s)
    if m:
        s = f"{m.group(1)}-{m.group(2)}"
    return s


def preset_ids() -> tuple[str, ...]:
    """All preset ids, in declaration order."""
    return tuple(PRESETS)


def _lookup_preset(name: str) -> tuple[ModelArch, tuple[str, ...]]:
    """Preset for a name or alias; ``UnknownModel`` with difflib suggestions otherwise."""
    norm = _normalise(name)
    if norm in PRESETS:
        return PRESETS[norm], ()
    if norm in _ALIASES:
        target = _ALIASES[norm]
        notes: tuple[str, ...] = ()
        if norm.startswith("deepseek-r1"):
            notes = ("DeepSeek-R1 has the DeepSeek-V3 architecture; using the deepseek-v3 preset",)
        return PRESETS[target], notes
    # tolerate a trailing "-v0.x" version on otherwise known ids
    base = re.sub(r"-v\d+(\.\d+)*$", "", norm)
    if base in PRESETS:
        return PRESETS[base], ()
    if base in _ALIASES:
        return PRESETS[_ALIASES[base]], ()
    choices = list(PRESETS) + list(_ALIASES)
    close = difflib.get_close_matches(norm, choices, n=8, cutoff=0.5)
    seen: list[str] = []
    for c in close:
        pid = _ALIASES.get(c, c)
        if pid not in seen:
            seen.append(pid)
    raise UnknownModel(name, tuple(seen[:5]), field="model")


# --------------------------------------------------------------------------------------------
# {"params_b": ...}: derive an architecture from a size.
# --------------------------------------------------------------------------------------------

_CUSTOM_KEYS = frozenset(
    {
        "id",
        "name",
        "params_b",
        "active_params_b",
        "n_layers",
        "hidden_size",
        "n_heads",
        "n_kv_heads",
        "head_dim",
        "ffn_size",
        "vocab_size",
        "max_context",
        "n_experts",
        "experts_per_token",
        "n_shared_experts",
        "moe_ffn_size",
        "first_k_dense_layers",
        "attention",
        "kv_lora_rank",
        "qk_rope_head_dim",
        "tie_embeddings",
        "gated_mlp",
    }
)

_DEFAULT_VOCAB = 128256  # Llama 3 tokenizer: the most common modern vocabulary
_DEFAULT_CONTEXT = 32768
_DEFAULT_KV_HEADS = 8
_DEFAULT_HEAD_DIM = 128
_FFN_RATIO = 3.5  # SwiGLU MLPs of Llama 3 / Mistral / Qwen use 3.5 x hidden


@lru_cache(maxsize=1)
def _layer_fit() -> tuple[float, float]:
    """Power law ``n_layers = a * P^b`` (P in billions) fitted over the dense presets.

    Ordinary least squares on ``log n_layers`` against ``log params_b``; computed once from the
    preset table (pure arithmetic, no I/O).
    """
    pts = [(math.log(m.params_b), math.log(m.n_layers)) for m in _PRESET_LIST if not m.is_moe]
    n = len(pts)
    mx = sum(x for x, _ in pts) / n
    my = sum(y for _, y in pts) / n
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    sxy = sum((x - mx) * (y - my) for x, y in pts)
    b = sxy / sxx
    a = math.exp(my - b * mx)
    return a, b


def _num(spec: Mapping[str, Any], key: str, *, kind: type = float, prefix: str = "") -> Any:
    """A positive finite number from ``spec[key]`` (int for ``kind=int``), else ``InvalidInput``."""
    value = spec[key]
    fname = f"{prefix}{key}"
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInput(f"{fname} must be a number, got {value!r}", field=fname)
    if not math.isfinite(float(value)) or value <= 0:
        raise InvalidInput(f"{fname} must be a positive finite number, got {value!r}", field=fname)
    if kind is int:
        if float(value) != int(value):
            raise InvalidInput(f"{fname} must be a whole number, got {value!r}", field=fname)
        return int(value)
    return float(value)


def _opt_int(spec: Mapping[str, Any], key: str, prefix: str = "") -> int | None:
    """An optional positive whole number from ``spec[key]``."""
    if key not in spec or spec[key] is None:
        return None
    return int(_num(spec, key, kind=int, prefix=prefix))


def _round_to(x: float, m: int) -> int:
    """Round ``x`` to the nearest positive multiple of ``m``."""
    return max(m, round(x / m) * m)


def _from_params(spec: Mapping[str, Any]) -> ResolvedModel:
    """Derive an architecture from ``{"params_b": ...}`` (rules in the module docstring)."""
    unknown = sorted(set(spec) - _CUSTOM_KEYS)
    if unknown:
        raise InvalidInput(
            f"unknown model field {unknown[0]!r}; known: {', '.join(sorted(_CUSTOM_KEYS))}",
            field=f"model.{unknown[0]}",
        )
    p_b = float(_num(spec, "params_b"))
    if p_b > 20000:
        raise InvalidInput(f"params_b {p_b} is implausibly large (> 20000)", field="params_b")
    notes: list[str] = []
    vocab = _opt_int(spec, "vocab_size")
    if vocab is None:
        vocab = _DEFAULT_VOCAB
        notes.append(f"vocab_size {vocab} assumed (Llama 3 tokenizer)")
    tie = bool(spec.get("tie_embeddings", False))
    gated = bool(spec.get("gated_mlp", True))
    n_experts = _opt_int(spec, "n_experts") or 0
    top_k = _opt_int(spec, "experts_per_token") or 0
    if n_experts and not top_k:
        top_k = 2
        notes.append("experts_per_token 2 assumed (Mixtral-style top-2 routing)")
    if top_k > max(n_experts, 0) and n_experts:
        raise InvalidInput(
            f"experts_per_token {top_k} exceeds n_experts {n_experts}", field="experts_per_token"
        )
    active_b = float(_num(spec, "active_params_b")) if spec.get("active_params_b") else None
    if active_b is not None and active_b > p_b:
        raise InvalidInput(
            f"active_params_b {active_b} exceeds params_b {p_b}", field="active_params_b"
        )
    # The size that sets depth and width: active parameters for an MoE model.
    size_b = p_b
    if n_experts:
        if active_b is None:
            active_b = p_b * min(1.0, (top_k + 1) / (n_experts + 1))
            notes.append(
                f"active_params_b {active_b:.1f} assumed: (top-k + 1) / (experts + 1) of the total"
            )
        size_b = active_b
    layers = _opt_int(spec, "n_layers")
    if layers is None:
        a, b = _layer_fit()
        layers = max(2, round(a * size_b**b))
        notes.append(
            f"n_layers {layers} from the fit n_layers = {a:.1f} * P^{b:.3f} over dense presets"
        )
    head_dim = _opt_int(spec, "head_dim")
    hidden = _opt_int(spec, "hidden_size")
    if hidden is None:
        # Solve size = layers * c * d^2 + vocab * d * (1 or 2) for d, with per-layer
        # c = 2 + 2 * kv/heads + 3 * 3.5 (GQA 8 KV heads, head_dim 128, SwiGLU 3.5 x d).
        emb_mult = 1 if tie else 2
        c = 2.0 + 2.0 * _DEFAULT_KV_HEADS * _DEFAULT_HEAD_DIM / 8192 + 3 * _FFN_RATIO
        target = size_b * 1e9
        disc = (vocab * emb_mult) ** 2 + 4 * layers * c * target
        d = (-vocab * emb_mult + math.sqrt(disc)) / (2 * layers * c)
        # a whole number of 8-head (or, for small models, 4-head) groups of 128 dims, so
        # that 8 (4) KV heads divide the query heads
        quantum = 1024 if d >= 3072 else 512
        hidden = _round_to(d, quantum)
        notes.append(
            f"hidden_size {hidden} solved from the size with ffn = {_FFN_RATIO} x hidden "
            f"(rounded to a multiple of {quantum})"
        )
    if head_dim is None:
        heads_given = _opt_int(spec, "n_heads")
        if heads_given and hidden % heads_given == 0:
            head_dim = hidden // heads_given
        else:
            head_dim = _DEFAULT_HEAD_DIM
            notes.append(f"head_dim {head_dim} assumed")
    heads = _opt_int(spec, "n_heads")
    if heads is None:
        heads = max(1, hidden // head_dim)
        notes.append(f"n_heads {heads} = hidden_size / head_dim")
    kv = _opt_int(spec, "n_kv_heads")
    if kv is None:
        kv = next(g for g in (_DEFAULT_KV_HEADS, 4, 2, 1) if heads % g == 0)
        notes.append(f"n_kv_heads {kv} assumed (grouped-query attention)")
    if heads % kv:
        raise InvalidInput(
            f"n_heads {heads} is not a multiple of n_kv_heads {kv}", field="n_kv_heads"
        )
    attention: AttentionKind = "mha" if kv == heads else "gqa"
    ctx = _opt_int(spec, "max_context")
    if ctx is None:
        ctx = _DEFAULT_CONTEXT
        notes.append(f"max_context {ctx} assumed")
    mats = 3 if gated else 2
    attn_params = hidden * heads * head_dim * 2 + 2 * hidden * kv * head_dim
    emb_params = vocab * hidden * (1 if tie else 2)
    ffn = _opt_int(spec, "ffn_size")
    moe_ffn = _opt_int(spec, "moe_ffn_size") or 0
    if n_experts:
        if ffn is None:
            ffn = _round_to(_FFN_RATIO * hidden, 256)
        if not moe_ffn:
            # experts sized so the total matches params_b
            rest = p_b * 1e9 - emb_params - layers * attn_params
            moe_ffn = _round_to(rest / (layers * n_experts * 3 * hidden), 64)
            notes.append(f"moe_ffn_size {moe_ffn} sized so the total matches params_b {p_b:g}")
    elif ffn is None:
        rest = p_b * 1e9 - emb_params - layers * attn_params
        if rest <= 0:
            raise InvalidInput(
                f"params_b {p_b:g} is too small for {layers} layers of hidden size {hidden}",
                field="params_b",
            )
        ffn = _round_to(rest / (layers * mats * hidden), 256)
        notes.append(f"ffn_size {ffn} sized so the total matches params_b {p_b:g}")
    arch = ModelArch(
        id=str(spec.get("id") or f"custom-{p_b:g}b"),
        name=str(spec.get("name") or f"custom {p_b:g}B"),
        params_b=p_b,
        active_params_b=active_b if active_b is not None else p_b,
        n_layers=layers,
        hidden_size=hidden,
        n_heads=heads,
        n_kv_heads=kv,
        head_dim=head_dim,
        ffn_size=ffn,
        vocab_size=vocab,
        max_context=ctx,
        attention=attention,
        tie_embeddings=tie,
        gated_mlp=gated,
        n_experts=n_experts,
        experts_per_token=top_k,
        moe_ffn_size=moe_ffn,
        n_shared_experts=_opt_int(spec, "n_shared_experts") or 0,
        first_k_dense_layers=_opt_int(spec, "first_k_dense_layers") or 0,
        source="custom",
    )
    computed = param_counts(arch).total / 1e9
    if abs(computed - p_b) / p_b > 0.10:
        notes.append(
            f"architecture gives {computed:.1f}B parameters against params_b {p_b:g}B; "
            "memory and timing use the architecture"
        )
    _validate(arch, prefix="model.")
    return ResolvedModel(arch, tuple(notes))


# --------------------------------------------------------------------------------------------
# {"hf_config": {...}}
# --------------------------------------------------------------------------------------------

# model_type -> (gated MLP, tied embeddings by default)
_HF_FAMILIES: dict[str, tuple[bool, bool]] = {
    "llama": (True, False),
    "llama4": (True, False),
    "llama4_text": (True, False),
    "mistral": (True, False),
    "mixtral": (True, False),
    "qwen2": (True, False),
    "qwen2_moe": (True, False),
    "qwen3": (True, False),
    "qwen3_moe": (True, False),
    "gemma": (True, True),
    "gemma2": (True, True),
    "gemma3_text": (True, True),
    "deepseek_v2": (True, False),
    "deepseek_v3": (True, False),
    "gptj": (False, False),
    "gpt_neox": (False, False),
    "falcon": (False, True),
    "RefinedWeb": (False, True),
    "RefinedWebModel": (False, True),
}


def _hf_int(cfg: Mapping[str, Any], keys: tuple[str, ...], *, required: bool = True) -> int | None:
    """First present integer among ``keys`` of a HF config (field named when required, absent)."""
    for k in keys:
        if k in cfg and cfg[k] is not None:
            return int(_num(cfg, k, kind=int, prefix="hf_config."))
    if required:
        raise InvalidInput(
            f"hf_config lacks {keys[0]!r} (also tried {', '.join(keys[1:]) or 'nothing else'})",
            field=f"hf_config.{keys[0]}",
        )
    return None


def _from_hf(raw: Any) -> ResolvedModel:
    """Parse a Hugging Face ``config.json`` dict (``text_config`` nesting handled)."""
    if not isinstance(raw, Mapping):
        raise InvalidInput("hf_config must be a JSON object (config.json)", field="hf_config")
    notes: list[str] = []
    cfg: Mapping[str, Any] = raw
    if isinstance(raw.get("text_config"), Mapping):
        cfg = {**raw["text_config"]}
        notes.append("read text_config (multimodal wrapper); vision tower not counted")
    mtype = str(cfg.get("model_type") or raw.get("model_type") or "")
    family = _HF_FAMILIES.get(mtype)
    if family is None:
        family = (True, False)
        notes.append(
            f"model_type {mtype!r} not recognised; assumed a gated (SwiGLU) MLP and untied "
            "embeddings"
        )
    gated, tie_default = family
    layers = _hf_int(cfg, ("num_hidden_layers", "n_layer", "num_layers", "n_layers"))
    hidden = _hf_int(cfg, ("hidden_size", "n_embd", "d_model"))
    heads = _hf_int(cfg, ("num_attention_heads", "n_head", "num_heads"))
    if layers is None or hidden is None or heads is None:  # unreachable: required=True
        raise InvalidInput("hf_config lacks layer/hidden/head counts", field="hf_config")
    kv = _hf_int(cfg, ("num_key_value_heads", "num_kv_heads", "n_head_kv"), required=False)
    if kv is None:
        kv = 1 if cfg.get("multi_query") else heads
    head_dim = _hf_int(cfg, ("head_dim",), required=False) or hidden // heads
    vocab = _hf_int(cfg, ("vocab_size",))
    assert vocab is not None
    ctx = _hf_int(
        cfg, ("max_position_embeddings", "n_positions", "seq_length", "max_seq_len"), required=False
    )
    if ctx is None:
        ctx = 2048
        notes.append("max_context 2048 assumed (no max_position_embeddings)")
    tie_raw = cfg.get("tie_word_embeddings", raw.get("tie_word_embeddings"))
    tie = tie_default if tie_raw is None else bool(tie_raw)

    n_experts = (
        _hf_int(cfg, ("num_local_experts", "num_experts", "n_routed_experts"), required=False) or 0
    )
    top_k = (
        _hf_int(cfg, ("num_experts_per_tok", "num_experts_per_token", "moe_top_k"), required=False)
        or 0
    )
    moe_ffn = 0
    n_shared = 0
    shared_ffn = 0
    first_dense = 0
    step = 1
    inter = _hf_int(cfg, ("intermediate_size", "n_inner", "ffn_hidden_size"), required=False)
    if inter is None:
        inter = 4 * hidden
        notes.append(f"ffn_size {inter} = 4 x hidden (no intermediate_size/n_inner)")
    ffn = inter
    if n_experts:
        if not top_k:
            raise InvalidInput(
                "MoE config lacks num_experts_per_tok", field="hf_config.num_experts_per_tok"
            )
        moe_ffn = _hf_int(cfg, ("moe_intermediate_size",), required=False) or inter
        if mtype.startswith("llama4"):
            ffn = _hf_int(cfg, ("intermediate_size_mlp",), required=False) or inter
            n_shared = 1
            step = _hf_int(cfg, ("interleave_moe_layer_step",), required=False) or 1
        n_shared = _hf_int(cfg, ("n_shared_experts", "num_shared_experts"), required=False) or (
            n_shared
        )
        sh = _hf_int(cfg, ("shared_expert_intermediate_size",), required=False)
        if sh:
            n_shared = max(n_shared, 1)
            shared_ffn = sh
        first_dense = _hf_int(cfg, ("first_k_dense_replace",), required=False) or 0
        if mtype == "qwen3_moe" or mtype == "qwen2_moe":
            step = _hf_int(cfg, ("decoder_sparse_step",), required=False) or 1
            if cfg.get("mlp_only_layers"):
                notes.append("mlp_only_layers ignored: every layer treated as MoE")
    attention: AttentionKind = "mha" if kv == heads else "gqa"
    kv_lora = _hf_int(cfg, ("kv_lora_rank",), required=False) or 0
    rope = q_lora = nope = v_dim = 0
    if kv_lora:
        attention = "mla"
        rope = _hf_int(cfg, ("qk_rope_head_dim",))  # type: ignore[assignment]
        nope = _hf_int(cfg, ("qk_nope_head_dim",))  # type: ignore[assignment]
        v_dim = _hf_int(cfg, ("v_head_dim",))  # type: ignore[assignment]
        q_lora = _hf_int(cfg, ("q_lora_rank",), required=False) or 0
        head_dim = v_dim
    window = 0
    window_layers = 0
    sw = cfg.get("sliding_window")
    if isinstance(sw, int) and sw > 0 and cfg.get("use_sliding_window", True):
        window = sw
        window_layers = layers // 2 if mtype.startswith("gemma") else layers
    chunk = cfg.get("attention_chunk_size")
    if isinstance(chunk, int) and chunk > 0:
        window = chunk
        window_layers = layers * 3 // 4
    name = str(raw.get("_name_or_path") or raw.get("name_or_path") or "")
    ident = _normalise(name) if name else f"hf-{mtype or 'model'}"
    arch = ModelArch(
        id=ident,
        name=name or ident,
        params_b=0.0,
        active_params_b=0.0,
        n_layers=layers,
        hidden_size=hidden,
        n_heads=heads,
        n_kv_heads=kv,
        head_dim=head_dim,
        ffn_size=ffn,
        vocab_size=vocab,
        max_context=ctx,
        attention=attention,
        tie_embeddings=tie,
        gated_mlp=gated,
        n_experts=n_experts,
        experts_per_token=top_k,
        n_shared_experts=n_shared,
        moe_ffn_size=moe_ffn,
        shared_expert_ffn_size=shared_ffn,
        first_k_dense_layers=first_dense,
        moe_layer_step=step,
        kv_lora_rank=kv_lora,
        qk_rope_head_dim=rope,
        q_lora_rank=q_lora,
        qk_nope_head_dim=nope,
        v_head_dim=v_dim,
        sliding_window=window,
        sliding_window_layers=window_layers,
        source="hf_config",
    )
    _validate(arch, prefix="hf_config.")
    pc = param_counts(arch)
    arch = replace(
        arch, params_b=round(pc.total / 1e9, 3), active_params_b=round(pc.active / 1e9, 3)
    )
    notes.append(
        f"parameter count computed from the config: {pc.total / 1e9:.2f}B total, "
        f"{pc.active / 1e9:.2f}B active per token"
    )
    return ResolvedModel(arch, tuple(notes))


def _validate(a: ModelArch, *, prefix: str) -> None:
    """Reject internally inconsistent shapes with the offending field named."""
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


def resolve_model(spec: str | Mapping[str, Any]) -> ResolvedModel:
    """Resolve a model reference to an architecture plus the assumptions made.

    ``spec``: a preset id/alias (case-insensitive, org prefix and instruct/quant suffixes
    ignored), ``{"params_b": ..., ...}`` or ``{"hf_config": {...}}``.

    Raises :class:`UnknownModel` (with the closest preset ids, by ``difflib``) for an unknown
    name and :class:`InvalidInput` naming the field for impossible or inconsistent numbers.
    """
    if isinstance(spec, str):
        arch, notes = _lookup_preset(spec)
        return ResolvedModel(arch, notes)
    if not isinstance(spec, Mapping):
        raise InvalidInput("model must be a preset name or an object", field="model")
    if "hf_config" in spec:
        extra = sorted(set(spec) - {"hf_config"})
        if extra:
            raise InvalidInput(
                f"hf_config cannot be combined with {extra[0]!r}", field=f"model.{extra[0]}"
            )
        return _from_hf(spec["hf_config"])
    if "params_b" in spec:
        return _from_params(spec)
    raise InvalidInput("model object needs 'params_b' or 'hf_config'", field="model.params_b")


def preset_aliases(model_id: str) -> tuple[str, ...]:
    """The aliases that resolve to preset ``model_id`` (sorted; the id itself excluded)."""
    return tuple(sorted(alias for alias, target in _ALIASES.items() if target == model_id))
