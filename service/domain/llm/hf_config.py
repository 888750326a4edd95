"""Read a Hugging Face ``config.json`` pasted as-is into a :class:`ModelArch`.

Families understood (``model_type``): Llama, Mistral, Mixtral, Qwen2/Qwen2-MoE/Qwen3/Qwen3-MoE,
Gemma/Gemma 2/Gemma 3, GPT-J, GPT-NeoX, Falcon (RefinedWeb), DeepSeek-V2/V3 (MLA), Llama 4
(``text_config`` nesting of the multimodal wrapper) and NVIDIA Nemotron-H (hybrid Mamba-2,
attention and MLP or MoE layers, laid out by ``hybrid_override_pattern`` or
``layers_block_type``). Each field is read from the first present spelling among the
families' names for it (``num_hidden_layers``/``n_layer``/...); an unknown ``model_type``
is read as a SwiGLU model with untied embeddings, and said so, unless it has recurrent-state
layers (Mamba, linear attention: Granite 4.0 H, Qwen3-Next, Jamba, ...), whose layout is
refused rather than misread as attention. Parameter counts are computed from the shapes.

The weights' format of the checkpoint (``checkpoint_precision``: what a request naming no
precision plans with) comes from ``quantization_config``: ``fp8``/``fbgemm_fp8`` -> fp8,
``mxfp4`` -> fp4, AWQ/GPTQ by ``bits`` (4 -> int4, 8 -> int8), compressed-tensors by ``format``
and ModelOpt by ``quant_algo``; any other method is named in the assumptions and the weights
are read as 16-bit.

Every number is validated on the way in: a missing required field, a non-number, a
non-positive count or one above its bound in ``HF_LIMITS`` raises :class:`InvalidInput`
naming ``hf_config.<field>``. Numbers the reader does not use must still fit in 64 bits (the
config is part of the plan's canonical request). Pure: no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from service.domain.errors import InvalidInput
from service.domain.llm.arch import ModelArch, check_arch, param_counts
from service.domain.llm.fields import positive_int
from service.domain.llm.names import normalise_name
from service.domain.vocabulary import AttentionKind, Precision

__all__ = ["check_numbers", "hf_arch"]

_PREFIX = "hf_config."

_LAYERS = 1000
_HIDDEN = 262_144
_SIZE = 1_048_576
_HEADS = 65_536
_EXPERTS = 65_536
_VOCAB = 10_000_000
_TOKENS = 100_000_000
HF_LIMITS: dict[str, int] = {
    **dict.fromkeys(("num_hidden_layers", "n_layer", "num_layers", "n_layers"), _LAYERS),
    **dict.fromkeys(("first_k_dense_replace", "interleave_moe_layer_step"), _LAYERS),
    "decoder_sparse_step": _LAYERS,
    **dict.fromkeys(("hidden_size", "n_embd", "d_model"), _HIDDEN),
    **dict.fromkeys(
        (
            "intermediate_size",
            "n_inner",
            "ffn_hidden_size",
            "intermediate_size_mlp",
            "moe_intermediate_size",
            "shared_expert_intermediate_size",
            "moe_shared_expert_intermediate_size",
            "mamba_head_dim",
            "ssm_state_size",
            "conv_kernel",
            "head_dim",
            "kv_lora_rank",
            "q_lora_rank",
            "qk_rope_head_dim",
            "qk_nope_head_dim",
            "v_head_dim",
        ),
        _SIZE,
    ),
    **dict.fromkeys(
        (
            "num_attention_heads",
            "n_head",
            "num_heads",
            "num_key_value_heads",
            "num_kv_heads",
            "n_head_kv",
            "mamba_num_heads",
            "n_groups",
        ),
        _HEADS,
    ),
    **dict.fromkeys(
        (
            "num_local_experts",
            "num_experts",
            "n_routed_experts",
            "num_experts_per_tok",
            "num_experts_per_token",
            "moe_top_k",
            "n_shared_experts",
            "num_shared_experts",
        ),
        _EXPERTS,
    ),
    "vocab_size": _VOCAB,
    **dict.fromkeys(
        (
            "max_position_embeddings",
            "n_positions",
            "seq_length",
            "max_seq_len",
            "sliding_window",
            "attention_chunk_size",
            "chunk_size",
        ),
        _TOKENS,
    ),
}
"""The largest value each numeric field read from a config may take (well above any published
model: 1,000 layers, hidden size 262,144, 100 million tokens of context)."""
_INT64 = 2**63

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
    "nemotron_h": (False, False),
    "falcon": (False, True),
    "RefinedWeb": (False, True),
    "RefinedWebModel": (False, True),
}


@dataclass(frozen=True, slots=True)
class _Mlp:
    """MLP and expert layout read from a config (sizes in elements; see :class:`ModelArch`)."""

    ffn: int
    n_experts: int = 0
    top_k: int = 0
    moe_ffn: int = 0
    n_shared: int = 0
    shared_ffn: int = 0
    first_dense: int = 0
    step: int = 1


@dataclass(frozen=True, slots=True)
class _Hybrid:
    """Layer counts and Mamba-2 shapes of a hybrid config (see :class:`ModelArch`)."""

    mlp_layers: int
    attention_layers: int
    ssm_layers: int
    heads: int
    head_dim: int
    state: int
    groups: int
    conv: int
    chunk: int
    fp32_state: bool


# Nemotron-H layer kinds: hybrid_override_pattern letters and layers_block_type names
_PATTERN_KINDS = {"M": "mamba", "*": "attention", "-": "mlp", "E": "moe"}
_BLOCK_KINDS = {"mamba": "mamba", "attention": "attention", "mlp": "mlp", "moe": "moe"}


@dataclass(frozen=True, slots=True)
class _Mla:
    """Multi-head latent attention ranks and head sizes (DeepSeek-V2/V3), in elements."""

    kv_lora: int
    rope: int
    q_lora: int
    nope: int
    v_dim: int


def _first_int(cfg: Mapping[str, Any], keys: tuple[str, ...]) -> int | None:
    """The first present (non-null) key of ``keys`` as a positive whole number, else ``None``."""
    for k in keys:
        if k in cfg and cfg[k] is not None:
            return _bounded(positive_int(cfg, k, prefix=_PREFIX), k)
    return None


def _bounded(value: int, key: str) -> int:
    limit = HF_LIMITS.get(key, _SIZE)
    if value > limit:
        shown = f"{value:,}" if value < 10**15 else f"{float(value):.3g}"
        raise InvalidInput(
            f"hf_config.{key} {shown} is above {limit:,}, more than any model has",
            field=f"{_PREFIX}{key}",
        )
    return value


def check_numbers(value: object, path: str) -> None:
    """Every number anywhere in ``value`` (a config) is finite and fits in 64 bits; else
    ``InvalidInput`` naming its path under ``path``."""
    stack: list[tuple[object, str]] = [(value, path)]
    while stack:
        node, where = stack.pop()
        if isinstance(node, Mapping):
            stack.extend((v, f"{where}.{k}") for k, v in node.items())
        elif isinstance(node, list | tuple):
            stack.extend((v, f"{where}[{i}]") for i, v in enumerate(node))
        elif isinstance(node, bool):
            continue
        elif (isinstance(node, int) and not -_INT64 <= node < _INT64) or (
            isinstance(node, float) and not math.isfinite(node)
        ):
            shown = f"{node:.3g}" if isinstance(node, float) else f"{float(node):.3g}"
            raise InvalidInput(
                f"{where} {shown} is not a finite number within ±9.2e18", field=where
            )


def _required_int(cfg: Mapping[str, Any], keys: tuple[str, ...]) -> int:
    """:func:`_first_int`, raising ``InvalidInput`` naming ``keys[0]`` when none is present."""
    value = _first_int(cfg, keys)
    if value is None:
        raise InvalidInput(
            f"hf_config lacks {keys[0]!r} (also tried {', '.join(keys[1:]) or 'nothing else'})",
            field=f"{_PREFIX}{keys[0]}",
        )
    return value


def _text_config(raw: Mapping[str, Any], notes: list[str]) -> Mapping[str, Any]:
    """The language model's part of the config (``text_config`` of a multimodal wrapper)."""
    inner = raw.get("text_config")
    if isinstance(inner, Mapping):
        notes.append("read text_config (multimodal wrapper); vision tower not counted")
        return {**inner}
    return raw


# Keys of recurrent-state layers (Mamba, linear attention) in configs whose layout this reader
# does not know: read as a transformer, every layer would be charged a KV cache it does not have
# and none of the state it has.
_STATE_LAYER_KEYS = (
    "mamba_d_state",
    "mamba_n_heads",
    "ssm_state_size",
    "linear_num_value_heads",
    "linear_key_head_dim",
    "attn_layer_period",
    "full_attention_interval",
)
_STATE_LAYER_KINDS = ("mamba", "mamba2", "linear_attention", "ssm")


def _reject_unknown_hybrid(cfg: Mapping[str, Any], mtype: str) -> None:
    """A 422 on ``hf_config.model_type`` for a hybrid state-space or linear-attention config
    other than Nemotron-H: its layout would be misread as all-attention layers."""
    if mtype == "nemotron_h":
        return
    keys = [k for k in _STATE_LAYER_KEYS if cfg.get(k) is not None]
    kinds = cfg.get("layer_types")
    if isinstance(kinds, list) and any(str(k) in _STATE_LAYER_KINDS for k in kinds):
        keys.append("layer_types")
    if keys:
        raise InvalidInput(
            f"hf_config is a hybrid state-space or linear-attention model ({mtype or 'no '}"
            f"model_type, {', '.join(keys)}); gpuplan reads the layer layout of nemotron_h "
            "hybrids only, and reading this one as a transformer would charge every layer a "
            "KV cache: use a preset or describe the model with params_b",
            field=f"{_PREFIX}model_type",
        )


def _family(mtype: str, notes: list[str]) -> tuple[bool, bool]:
    """``(gated MLP, tied embeddings by default)`` for a ``model_type``."""
    family = _HF_FAMILIES.get(mtype)
    if family is None:
        notes.append(
            f"model_type {mtype!r} not recognised; assumed a gated (SwiGLU) MLP and untied "
            "embeddings"
        )
        return True, False
    return family


def _context(cfg: Mapping[str, Any], notes: list[str]) -> int:
    """Context window in tokens (2048 when the config names none)."""
    ctx = _first_int(cfg, ("max_position_embeddings", "n_positions", "seq_length", "max_seq_len"))
    if ctx is None:
        ctx = 2048
        notes.append("max_context 2048 assumed (no max_position_embeddings)")
    return ctx


def _experts(
    cfg: Mapping[str, Any], mtype: str, inter: int, n_experts: int, top_k: int, notes: list[str]
) -> _Mlp:
    """Expert layout of an MoE config: sizes, shared experts, dense layers and layer step."""
    if not top_k:
        raise InvalidInput(
            "MoE config lacks num_experts_per_tok", field=f"{_PREFIX}num_experts_per_tok"
        )
    ffn = inter
    n_shared = 0
    shared_ffn = 0
    step = 1
    moe_ffn = _first_int(cfg, ("moe_intermediate_size",)) or inter
    if mtype.startswith("llama4"):
        ffn = _first_int(cfg, ("intermediate_size_mlp",)) or inter
        n_shared = 1
        step = _first_int(cfg, ("interleave_moe_layer_step",)) or 1
    n_shared = _first_int(cfg, ("n_shared_experts", "num_shared_experts")) or n_shared
    sh = _first_int(cfg, ("shared_expert_intermediate_size", "moe_shared_expert_intermediate_size"))
    if sh:
        n_shared = max(n_shared, 1)
        shared_ffn = sh
    first_dense = _first_int(cfg, ("first_k_dense_replace",)) or 0
    if mtype in ("qwen3_moe", "qwen2_moe"):
        step = _first_int(cfg, ("decoder_sparse_step",)) or 1
        if cfg.get("mlp_only_layers"):
            notes.append("mlp_only_layers ignored: every layer treated as MoE")
    return _Mlp(ffn, n_experts, top_k, moe_ffn, n_shared, shared_ffn, first_dense, step)


def _mlp(cfg: Mapping[str, Any], mtype: str, hidden: int, notes: list[str]) -> _Mlp:
    """Dense MLP size and, for an MoE config, the expert layout."""
    n_experts = _first_int(cfg, ("num_local_experts", "num_experts", "n_routed_experts")) or 0
    top_k = _first_int(cfg, ("num_experts_per_tok", "num_experts_per_token", "moe_top_k")) or 0
    inter = _first_int(cfg, ("intermediate_size", "n_inner", "ffn_hidden_size"))
    if inter is None:
        inter = 4 * hidden
        notes.append(f"ffn_size {inter} = 4 x hidden (no intermediate_size/n_inner)")
    if n_experts:
        return _experts(cfg, mtype, inter, n_experts, top_k, notes)
    return _Mlp(ffn=inter, top_k=top_k)


_NO_MLA = _Mla(kv_lora=0, rope=0, q_lora=0, nope=0, v_dim=0)


def _mla(cfg: Mapping[str, Any]) -> _Mla:
    """MLA ranks when the config has a ``kv_lora_rank``, else :data:`_NO_MLA` (MHA/GQA)."""
    kv_lora = _first_int(cfg, ("kv_lora_rank",)) or 0
    if not kv_lora:
        return _NO_MLA
    rope = _required_int(cfg, ("qk_rope_head_dim",))
    nope = _required_int(cfg, ("qk_nope_head_dim",))
    v_dim = _required_int(cfg, ("v_head_dim",))
    q_lora = _first_int(cfg, ("q_lora_rank",)) or 0
    return _Mla(kv_lora, rope, q_lora, nope, v_dim)


def _kv_heads(cfg: Mapping[str, Any], heads: int) -> int:
    """KV heads: given, 1 for a multi-query config (Falcon 7B), else one per query head."""
    kv = _first_int(cfg, ("num_key_value_heads", "num_kv_heads", "n_head_kv"))
    if kv is None:
        kv = 1 if cfg.get("multi_query") else heads
    return kv


def _tied(cfg: Mapping[str, Any], raw: Mapping[str, Any], default: bool) -> bool:
    """Whether the LM head shares the embedding table (the family's default when unstated)."""
    tie_raw = cfg.get("tie_word_embeddings", raw.get("tie_word_embeddings"))
    return default if tie_raw is None else bool(tie_raw)


def _identity(raw: Mapping[str, Any], mtype: str) -> tuple[str, str]:
    """``(id, name)``: the normalised ``_name_or_path``, or ``hf-<model_type>`` without one."""
    name = str(raw.get("_name_or_path") or raw.get("name_or_path") or "")
    ident = normalise_name(name) if name else f"hf-{mtype or 'model'}"
    return ident, name or ident


def _window(cfg: Mapping[str, Any], mtype: str, layers: int) -> tuple[int, int]:
    """``(window tokens, layers using it)`` for sliding-window or chunked attention, else 0s.

    Gemma alternates sliding and global layers (half); Llama 4 chunks 3 of every 4 layers.
    """
    window = 0
    window_layers = 0
    sw = cfg.get("sliding_window")
    if isinstance(sw, int) and sw > 0 and cfg.get("use_sliding_window", True):
        window = _bounded(sw, "sliding_window")
        window_layers = layers // 2 if mtype.startswith("gemma") else layers
    chunk = cfg.get("attention_chunk_size")
    if isinstance(chunk, int) and chunk > 0:
        window = _bounded(chunk, "attention_chunk_size")
        window_layers = layers * 3 // 4
    return window, window_layers


def _layer_kinds(cfg: Mapping[str, Any], layers: int) -> list[str] | None:
    """Kind of each layer of a Nemotron-H config (``None``: not a hybrid config)."""
    pattern = cfg.get("hybrid_override_pattern")
    blocks = cfg.get("layers_block_type")
    if isinstance(pattern, str) and pattern:
        unknown = sorted({c for c in pattern if c not in _PATTERN_KINDS})
        if unknown:
            raise InvalidInput(
                f"hybrid_override_pattern has layer kinds {''.join(unknown)!r}; known: M "
                "(Mamba-2), * (attention), - (MLP), E (MoE)",
                field=f"{_PREFIX}hybrid_override_pattern",
            )
        kinds = [_PATTERN_KINDS[c] for c in pattern]
    elif isinstance(blocks, list) and blocks:
        names = [str(b) for b in blocks]
        unknown = sorted({b for b in names if b not in _BLOCK_KINDS})
        if unknown:
            raise InvalidInput(
                f"layers_block_type has layer kinds {', '.join(unknown)}; known: "
                f"{', '.join(_BLOCK_KINDS)}",
                field=f"{_PREFIX}layers_block_type",
            )
        kinds = [_BLOCK_KINDS[b] for b in names]
    else:
        return None
    if len(kinds) != layers:
        raise InvalidInput(
            f"the hybrid layer pattern names {len(kinds)} layers, num_hidden_layers {layers}",
            field=f"{_PREFIX}num_hidden_layers",
        )
    return kinds


def _hybrid(cfg: Mapping[str, Any], layers: int, notes: list[str]) -> _Hybrid | None:
    """Layer counts and Mamba-2 shapes of a Nemotron-H config (``None`` for other configs).

    Each of its layers is one residual block: a Mamba-2 mixer, attention, a dense MLP or an
    MoE block. Where dense and MoE blocks both occur, all MLP blocks are read as the config's
    kind (MoE when it has experts), and said so."""
    kinds = _layer_kinds(cfg, layers)
    if kinds is None:
        return None
    mlp_layers = kinds.count("mlp") + kinds.count("moe")
    if kinds.count("mlp") and kinds.count("moe"):
        notes.append(
            f"{kinds.count('mlp')} dense MLP blocks beside {kinds.count('moe')} MoE blocks: "
            "all read as MoE"
        )
    ssm_layers = kinds.count("mamba")
    if not mlp_layers:
        raise InvalidInput(
            "the hybrid layer pattern has no MLP or MoE block", field=f"{_PREFIX}num_hidden_layers"
        )
    if ssm_layers:
        heads = _required_int(cfg, ("mamba_num_heads",))
        head_dim = _required_int(cfg, ("mamba_head_dim",))
        state = _required_int(cfg, ("ssm_state_size",))
        groups = _first_int(cfg, ("n_groups",)) or 1
        conv = _first_int(cfg, ("conv_kernel",)) or 4
        chunk = _first_int(cfg, ("chunk_size",)) or 0
        if heads % groups:
            raise InvalidInput(
                f"mamba_num_heads {heads} is not a multiple of n_groups {groups}",
                field=f"{_PREFIX}n_groups",
            )
    else:
        heads = head_dim = state = groups = conv = chunk = 0
    fp32 = str(cfg.get("mamba_ssm_cache_dtype", "")).lower() in ("float32", "fp32")
    notes.append(
        f"hybrid layers: {ssm_layers} Mamba-2, {kinds.count('attention')} attention, "
        f"{mlp_layers} MLP/MoE blocks"
    )
    return _Hybrid(
        mlp_layers, kinds.count("attention"), ssm_layers, heads, head_dim, state, groups, conv,
        chunk, fp32,
    )  # fmt: skip


def _with_counts(arch: ModelArch, notes: list[str]) -> ModelArch:
    """``arch`` with ``params_b``/``active_params_b`` computed from its shapes (3 decimals)."""
    pc = param_counts(arch)
    notes.append(
        f"parameter count computed from the config: {pc.total / 1e9:.2f}B total, "
        f"{pc.active / 1e9:.2f}B active per token"
    )
    return replace(
        arch, params_b=round(pc.total / 1e9, 3), active_params_b=round(pc.active / 1e9, 3)
    )


_QUANT_METHODS: dict[str, Precision] = {"fp8": "fp8", "fbgemm_fp8": "fp8", "mxfp4": "fp4"}
_COMPRESSED_FORMATS: dict[str, Precision] = {
    "float-quantized": "fp8",
    "pack-quantized": "int4",
    "int-quantized": "int8",
    "nvfp4-pack-quantized": "fp4",
    "mxfp4-pack-quantized": "fp4",
}
_MODELOPT_ALGOS: dict[str, Precision] = {"fp8": "fp8", "nvfp4": "fp4", "w4a16_awq": "int4"}
_BITS: dict[int, Precision] = {4: "int4", 8: "int8"}


def _checkpoint_precision(
    cfg: Mapping[str, Any], raw: Mapping[str, Any], notes: list[str]
) -> Precision:
    """The weights' format from ``quantization_config`` (``bf16`` when there is none)."""
    q = raw.get("quantization_config", cfg.get("quantization_config"))
    if q is None:
        return "bf16"
    fname = f"{_PREFIX}quantization_config"
    if not isinstance(q, Mapping):
        raise InvalidInput(f"{fname} must be a JSON object", field=fname)
    method = str(q.get("quant_method") or "").strip().lower()
    found: Precision | None = _QUANT_METHODS.get(method)
    if method in ("awq", "gptq"):
        bits = q.get("bits", q.get("w_bit"))
        found = _BITS.get(bits) if isinstance(bits, int) and not isinstance(bits, bool) else None
        if found is None:
            raise InvalidInput(
                f"{fname}.bits: {method} weights of {bits!r} bits are not planned (4 or 8)",
                field=f"{fname}.bits",
            )
    elif method == "compressed-tensors":
        found = _COMPRESSED_FORMATS.get(str(q.get("format") or "").lower())
    elif method == "modelopt":
        found = _MODELOPT_ALGOS.get(str(q.get("quant_algo") or "").lower())
    if found is None:
        notes.append(
            f"quantization_config ({method or 'no quant_method'}) is not a format gpuplan "
            "reads: the weights are planned as 16-bit unless the request names a precision"
        )
        return "bf16"
    return found


_UNQUANTIZED_LISTS = ("modules_to_not_convert", "ignore", "exclude_modules")
_MXFP4 = frozenset({"mxfp4", "mxfp4-pack-quantized"})


def _modelled(module: str, experts_only: bool) -> bool:
    """Whether the model already counts an unconverted module as 16-bit: the embedding and the
    head always, an MoE router (a few million weights) and, in an experts-only checkpoint, the
    attention."""
    if "lm_head" in module or "embed" in module or "router" in module:
        return True
    if module.rstrip("*.$").endswith(".gate"):  # a router, also as a regex (``re:.*mlp.gate$``)
        return True
    return experts_only and "attn" in module


def _quantized_scope(
    raw: Mapping[str, Any], cfg: Mapping[str, Any], arch: ModelArch, notes: list[str]
) -> ModelArch:
    """``arch`` with what its ``quantization_config`` leaves 16-bit and how its FP4 weights
    are scaled: an MoE checkpoint whose unconverted modules (``modules_to_not_convert``,
    compressed-tensors' ``ignore``, ModelOpt's ``exclude_modules``) name the attention keeps
    everything but the routed experts 16-bit (gpt-oss); MXFP4 carries one scale per 32
    weights. Anything else is planned as the whole body in the checkpoint's format, and the
    unconverted modules that leaves out are named in the assumptions."""
    q = raw.get("quantization_config", cfg.get("quantization_config"))
    if not isinstance(q, Mapping) or arch.checkpoint_precision == "bf16":
        return arch
    kept: list[str] = []
    for key in _UNQUANTIZED_LISTS:
        value = q.get(key)
        if isinstance(value, list):
            kept.extend(str(v).lower() for v in value)
    experts_only = arch.is_moe and any("attn" in module for module in kept)
    fmt = arch.checkpoint_precision
    if experts_only:
        notes.append(
            "quantization_config leaves the attention unconverted: only the routed experts "
            f"are planned in {fmt}, the rest 16-bit"
        )
    missed = [module for module in kept if not _modelled(module, experts_only)]
    if missed:
        notes.append(
            f"quantization_config leaves {len(missed)} more module pattern(s) unconverted "
            f"({missed[0]}{', ...' if len(missed) > 1 else ''}); they are planned in {fmt} "
            "like the rest of the body"
        )
    scheme = {str(q.get(k) or "").lower() for k in ("quant_method", "format", "quant_algo")}
    return replace(
        arch,
        experts_only_quantized=experts_only,
        fp4_scale_block=32 if scheme & _MXFP4 else arch.fp4_scale_block,
    )


def hf_arch(raw: object) -> tuple[ModelArch, tuple[str, ...]]:
    """Architecture and assumptions for a Hugging Face ``config.json`` object.

    Raises :class:`InvalidInput` naming the ``hf_config.`` field that is missing or impossible.
    """
    if not isinstance(raw, Mapping):
        raise InvalidInput("hf_config must be a JSON object (config.json)", field="hf_config")
    check_numbers(raw, "hf_config")
    notes: list[str] = []
    cfg = _text_config(raw, notes)
    mtype = str(cfg.get("model_type") or raw.get("model_type") or "")
    _reject_unknown_hybrid(cfg, mtype)
    gated, tie_default = _family(mtype, notes)
    layers = _required_int(cfg, ("num_hidden_layers", "n_layer", "num_layers", "n_layers"))
    hidden = _required_int(cfg, ("hidden_size", "n_embd", "d_model"))
    heads = _required_int(cfg, ("num_attention_heads", "n_head", "num_heads"))
    kv = _kv_heads(cfg, heads)
    head_dim = _first_int(cfg, ("head_dim",)) or hidden // heads
    vocab = _required_int(cfg, ("vocab_size",))
    ctx = _context(cfg, notes)
    tie = _tied(cfg, raw, tie_default)
    mlp = _mlp(cfg, mtype, hidden, notes)
    attention: AttentionKind = "mha" if kv == heads else "gqa"
    mla = _mla(cfg)
    if mla.kv_lora:
        attention = "mla"
        head_dim = mla.v_dim
    hybrid = _hybrid(cfg, layers, notes)
    if hybrid is not None:
        layers = hybrid.mlp_layers
    window, window_layers = _window(cfg, mtype, layers)
    ident, name = _identity(raw, mtype)
    arch = ModelArch(
        id=ident,
        name=name,
        params_b=0.0,
        active_params_b=0.0,
        n_layers=layers,
        hidden_size=hidden,
        n_heads=heads,
        n_kv_heads=kv,
        head_dim=head_dim,
        ffn_size=mlp.ffn,
        vocab_size=vocab,
        max_context=ctx,
        attention=attention,
        tie_embeddings=tie,
        gated_mlp=gated,
        n_experts=mlp.n_experts,
        experts_per_token=mlp.top_k,
        n_shared_experts=mlp.n_shared,
        moe_ffn_size=mlp.moe_ffn,
        shared_expert_ffn_size=mlp.shared_ffn,
        first_k_dense_layers=mlp.first_dense,
        moe_layer_step=mlp.step,
        kv_lora_rank=mla.kv_lora,
        qk_rope_head_dim=mla.rope,
        q_lora_rank=mla.q_lora,
        qk_nope_head_dim=mla.nope,
        v_head_dim=mla.v_dim,
        sliding_window=window,
        sliding_window_layers=window_layers,
        checkpoint_precision=_checkpoint_precision(cfg, raw, notes),
        source="hf_config",
    )
    if hybrid is not None:
        arch = replace(
            arch,
            attention_layers=hybrid.attention_layers,
            ssm_layers=hybrid.ssm_layers,
            ssm_heads=hybrid.heads,
            ssm_head_dim=hybrid.head_dim,
            ssm_state_size=hybrid.state,
            ssm_groups=hybrid.groups,
            ssm_conv_kernel=hybrid.conv,
            ssm_chunk_size=hybrid.chunk,
            ssm_state_fp32=hybrid.fp32_state,
        )
    arch = _quantized_scope(raw, cfg, arch, notes)
    check_arch(arch, prefix=_PREFIX)
    return _with_counts(arch, notes), tuple(notes)
