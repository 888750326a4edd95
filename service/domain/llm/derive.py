"""Derive an architecture from ``{"params_b": 70, ...}``: a size plus any architecture fields
the caller knows.

Missing fields are derived with stated rules, each recorded as an assumption:

* vocabulary: the Llama 3 tokenizer (128,256 tokens); context 32,768 tokens;
* MoE: top-2 routing; active parameters ``(top-k + 1) / (experts + 1)`` of the total; depth and
  width follow the *active* size;
* ``n_layers`` from a power law fitted over the dense presets (:func:`_layer_fit`);
* ``hidden_size`` solved from the size for GQA with 8 KV heads, head_dim 128 and a SwiGLU MLP of
  3.5 x hidden, rounded to whole groups of heads;
* ``ffn_size`` (dense) or ``moe_ffn_size`` (MoE) sized so the total matches ``params_b``.

Units: parameter counts in billions (``*_b``); sizes in elements; context in tokens. Pure: no
I/O.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from service.domain.errors import InvalidInput
from service.domain.llm.arch import ModelArch, check_arch, param_counts
from service.domain.llm.fields import optional_int, positive_float
from service.domain.llm.presets import PRESETS
from service.domain.vocabulary import AttentionKind

__all__ = ["derive_arch"]

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

_MAX_PARAMS_B = 20000
_DEFAULT_VOCAB = 128256  # Llama 3 tokenizer: the most common modern vocabulary
_DEFAULT_CONTEXT = 32768
_DEFAULT_KV_HEADS = 8
_DEFAULT_HEAD_DIM = 128
_FFN_RATIO = 3.5  # SwiGLU MLPs of Llama 3 / Mistral / Qwen use 3.5 x hidden


@dataclass(frozen=True, slots=True)
class _Frame:
    """The shapes fixed before the MLP is sized (element counts)."""

    layers: int
    hidden: int
    heads: int
    kv: int
    head_dim: int
    vocab: int
    tie: bool
    gated: bool


@lru_cache(maxsize=1)
def _layer_fit() -> tuple[float, float]:
    """Power law ``n_layers = a * P^b`` (P in billions) fitted over the dense presets.

    Ordinary least squares on ``log n_layers`` against ``log params_b``; computed once from the
    preset table (pure arithmetic, no I/O).
    """
    pts = [(math.log(m.params_b), math.log(m.n_layers)) for m in PRESETS.values() if not m.is_moe]
    n = len(pts)
    mx = sum(x for x, _ in pts) / n
    my = sum(y for _, y in pts) / n
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    sxy = sum((x - mx) * (y - my) for x, y in pts)
    b = sxy / sxx
    a = math.exp(my - b * mx)
    return a, b


def _round_to(x: float, m: int) -> int:
    """Round ``x`` to the nearest positive multiple of ``m``."""
    return max(m, round(x / m) * m)


def _check_keys(spec: Mapping[str, Any]) -> None:
    """Refuse a field this form does not know, naming it and listing the known ones."""
    unknown = sorted(set(spec) - _CUSTOM_KEYS)
    if unknown:
        raise InvalidInput(
            f"unknown model field {unknown[0]!r}; known: {', '.join(sorted(_CUSTOM_KEYS))}",
            field=f"model.{unknown[0]}",
        )


def _params_b(spec: Mapping[str, Any]) -> float:
    """Total parameters in billions, within (0, 20000]."""
    p_b = positive_float(spec, "params_b")
    if p_b > _MAX_PARAMS_B:
        raise InvalidInput(f"params_b {p_b} is implausibly large (> 20000)", field="params_b")
    return p_b


def _vocab(spec: Mapping[str, Any], notes: list[str]) -> int:
    """Vocabulary size, the Llama 3 tokenizer's when not given."""
    vocab = optional_int(spec, "vocab_size")
    if vocab is None:
        vocab = _DEFAULT_VOCAB
        notes.append(f"vocab_size {vocab} assumed (Llama 3 tokenizer)")
    return vocab


def _routing(spec: Mapping[str, Any], notes: list[str]) -> tuple[int, int]:
    """``(n_experts, experts_per_token)``; 0 experts for a dense model, top-2 by default."""
    n_experts = optional_int(spec, "n_experts") or 0
    top_k = optional_int(spec, "experts_per_token") or 0
    if n_experts and not top_k:
        top_k = 2
        notes.append("experts_per_token 2 assumed (Mixtral-style top-2 routing)")
    if top_k > max(n_experts, 0) and n_experts:
        raise InvalidInput(
            f"experts_per_token {top_k} exceeds n_experts {n_experts}", field="experts_per_token"
        )
    return n_experts, top_k


def _active_params_b(
    spec: Mapping[str, Any], p_b: float, n_experts: int, top_k: int, notes: list[str]
) -> float | None:
    """Active parameters per token in billions: given, assumed for an MoE model, else ``None``."""
    active_b = positive_float(spec, "active_params_b") if spec.get("active_params_b") else None
    if active_b is not None and active_b > p_b:
        raise InvalidInput(
            f"active_params_b {active_b} exceeds params_b {p_b}", field="active_params_b"
        )
    if n_experts and active_b is None:
        active_b = p_b * min(1.0, (top_k + 1) / (n_experts + 1))
        notes.append(
            f"active_params_b {active_b:.1f} assumed: (top-k + 1) / (experts + 1) of the total"
        )
    return active_b


def _n_layers(spec: Mapping[str, Any], size_b: float, notes: list[str]) -> int:
    """Depth: given, or from the power-law fit over the dense presets."""
    layers = optional_int(spec, "n_layers")
    if layers is None:
        a, b = _layer_fit()
        layers = max(2, round(a * size_b**b))
        notes.append(
            f"n_layers {layers} from the fit n_layers = {a:.1f} * P^{b:.3f} over dense presets"
        )
    return layers


def _hidden_size(
    spec: Mapping[str, Any], size_b: float, layers: int, vocab: int, tie: bool, notes: list[str]
) -> int:
    """Width: given, or solved from the size (quadratic in ``d``, see below)."""
    hidden = optional_int(spec, "hidden_size")
    if hidden is not None:
        return hidden
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
    return hidden


def _attention_heads(
    spec: Mapping[str, Any], hidden: int, head_dim: int | None, notes: list[str]
) -> tuple[int, int, int]:
    """``(head_dim, n_heads, n_kv_heads)``: given, or head_dim 128 with 8 (4, 2, 1) KV heads."""
    if head_dim is None:
        heads_given = optional_int(spec, "n_heads")
        if heads_given and hidden % heads_given == 0:
            head_dim = hidden // heads_given
        else:
            head_dim = _DEFAULT_HEAD_DIM
            notes.append(f"head_dim {head_dim} assumed")
    heads = optional_int(spec, "n_heads")
    if heads is None:
        heads = max(1, hidden // head_dim)
        notes.append(f"n_heads {heads} = hidden_size / head_dim")
    kv = optional_int(spec, "n_kv_heads")
    if kv is None:
        kv = next(g for g in (_DEFAULT_KV_HEADS, 4, 2, 1) if heads % g == 0)
        notes.append(f"n_kv_heads {kv} assumed (grouped-query attention)")
    if heads % kv:
        raise InvalidInput(
            f"n_heads {heads} is not a multiple of n_kv_heads {kv}", field="n_kv_heads"
        )
    return head_dim, heads, kv


def _max_context(spec: Mapping[str, Any], notes: list[str]) -> int:
    """Context window in tokens, 32,768 when not given."""
    ctx = optional_int(spec, "max_context")
    if ctx is None:
        ctx = _DEFAULT_CONTEXT
        notes.append(f"max_context {ctx} assumed")
    return ctx


def _params_left_for_mlp(p_b: float, f: _Frame) -> float:
    """Parameters (plain count) the size leaves after attention and embeddings."""
    attn_params = f.hidden * f.heads * f.head_dim * 2 + 2 * f.hidden * f.kv * f.head_dim
    emb_params = f.vocab * f.hidden * (1 if f.tie else 2)
    return p_b * 1e9 - emb_params - f.layers * attn_params


def _mlp_sizes(
    spec: Mapping[str, Any], p_b: float, f: _Frame, n_experts: int, notes: list[str]
) -> tuple[int, int]:
    """``(ffn_size, moe_ffn_size)``: given, or sized so the total matches ``params_b``.

    MoE: a missing dense ``ffn_size`` is 3.5 x hidden and the experts take the rest. Dense: the
    MLP takes the rest (``InvalidInput`` when nothing is left).
    """
    ffn = optional_int(spec, "ffn_size")
    moe_ffn = optional_int(spec, "moe_ffn_size") or 0
    if n_experts:
        if ffn is None:
            ffn = _round_to(_FFN_RATIO * f.hidden, 256)
        if not moe_ffn:
            # experts sized so the total matches params_b
            rest = _params_left_for_mlp(p_b, f)
            moe_ffn = _round_to(rest / (f.layers * n_experts * 3 * f.hidden), 64)
            notes.append(f"moe_ffn_size {moe_ffn} sized so the total matches params_b {p_b:g}")
    elif ffn is None:
        rest = _params_left_for_mlp(p_b, f)
        if rest <= 0:
            raise InvalidInput(
                f"params_b {p_b:g} is too small for {f.layers} layers of hidden size {f.hidden}",
                field="params_b",
            )
        mats = 3 if f.gated else 2
        ffn = _round_to(rest / (f.layers * mats * f.hidden), 256)
        notes.append(f"ffn_size {ffn} sized so the total matches params_b {p_b:g}")
    return ffn, moe_ffn


def derive_arch(spec: Mapping[str, Any]) -> tuple[ModelArch, tuple[str, ...]]:
    """Architecture and assumptions for ``{"params_b": ...}`` (rules in the module docstring).

    Raises :class:`InvalidInput` naming the field for an unknown key or an impossible number.
    """
    _check_keys(spec)
    p_b = _params_b(spec)
    notes: list[str] = []
    vocab = _vocab(spec, notes)
    tie = bool(spec.get("tie_embeddings", False))
    gated = bool(spec.get("gated_mlp", True))
    n_experts, top_k = _routing(spec, notes)
    active_b = _active_params_b(spec, p_b, n_experts, top_k, notes)
    # The size that sets depth and width: active parameters for an MoE model.
    size_b = active_b if n_experts and active_b is not None else p_b
    layers = _n_layers(spec, size_b, notes)
    head_dim_given = optional_int(spec, "head_dim")
    hidden = _hidden_size(spec, size_b, layers, vocab, tie, notes)
    head_dim, heads, kv = _attention_heads(spec, hidden, head_dim_given, notes)
    attention: AttentionKind = "mha" if kv == heads else "gqa"
    ctx = _max_context(spec, notes)
    frame = _Frame(layers, hidden, heads, kv, head_dim, vocab, tie, gated)
    ffn, moe_ffn = _mlp_sizes(spec, p_b, frame, n_experts, notes)
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
        n_shared_experts=optional_int(spec, "n_shared_experts") or 0,
        first_k_dense_layers=optional_int(spec, "first_k_dense_layers") or 0,
        source="custom",
    )
    computed = param_counts(arch).total / 1e9
    if abs(computed - p_b) / p_b > 0.10:
        notes.append(
            f"architecture gives {computed:.1f}B parameters against params_b {p_b:g}B; "
            "memory and timing use the architecture"
        )
    check_arch(arch, prefix="model.")
    return arch, tuple(notes)
