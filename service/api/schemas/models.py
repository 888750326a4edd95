"""Wire types for model references (preset id, parameter count, or a Hugging Face config)."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from msgspec import Meta

from service.api.schemas.common import WireIn, WireOut
from service.domain.errors import InvalidInput
from service.domain.llm import ModelArch, check_numbers, param_counts
from service.domain.vocabulary import AttentionKind

PositiveInt = Annotated[int, Meta(ge=1, le=10_000_000)]
Count = Annotated[int, Meta(ge=0, le=10_000_000)]

ModelId = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=200,
        description="A preset id or alias (see GET /v1/models), e.g. 'llama-3.1-70b'.",
        examples=["llama-3.1-70b"],
    ),
]


class ModelSpecIn(WireIn, kw_only=True):
    """A custom model: ``params_b`` with optional architecture fields (missing ones are derived
    and listed in ``assumptions``), or ``hf_config``: a Hugging Face ``config.json`` as-is."""

    params_b: (
        Annotated[float, Meta(gt=0, le=100_000, description="Total parameters, billions.")] | None
    ) = None
    active_params_b: (
        Annotated[float, Meta(gt=0, le=100_000, description="Active per token (MoE), billions.")]
        | None
    ) = None
    n_layers: PositiveInt | None = None
    hidden_size: PositiveInt | None = None
    n_heads: PositiveInt | None = None
    n_kv_heads: PositiveInt | None = None
    head_dim: PositiveInt | None = None
    ffn_size: PositiveInt | None = None
    vocab_size: PositiveInt | None = None
    max_context: PositiveInt | None = None
    n_experts: Count | None = None
    experts_per_token: Count | None = None
    n_shared_experts: Count | None = None
    moe_ffn_size: Count | None = None
    first_k_dense_layers: Count | None = None
    attention: AttentionKind | None = None
    kv_lora_rank: Count | None = None
    qk_rope_head_dim: Count | None = None
    tie_embeddings: bool | None = None
    gated_mlp: bool | None = None
    name: Annotated[str, Meta(max_length=200)] | None = None
    hf_config: (
        Annotated[
            dict[str, Any], Meta(description="A Hugging Face config.json object, pasted as-is.")
        ]
        | None
    ) = None

    def to_mapping(self) -> dict[str, Any]:
        values = {k: v for k, v in msgspec.structs.asdict(self).items() if v is not None}
        if "hf_config" in values and len(values) > 1:
            raise InvalidInput(
                "give either hf_config or params_b with architecture fields, not both",
                field="model",
            )
        if "hf_config" not in values and "params_b" not in values:
            raise InvalidInput(
                "a custom model needs params_b (or hf_config)", field="model.params_b"
            )
        if "hf_config" in values:
            check_numbers(values["hf_config"], "model.hf_config")
        return values


ModelIn = ModelId | ModelSpecIn


class ModelOut(WireOut, kw_only=True):
    id: str
    name: str
    params_b: float
    active_params_b: float
    computed_params_b: float
    n_layers: Annotated[
        int,
        Meta(
            description="Layers with an MLP or MoE block: every layer of a transformer; of a "
            "hybrid model (Nemotron-H), its MLP/MoE blocks."
        ),
    ]
    attention_layers: Annotated[
        int, Meta(description="Layers with attention, the ones that hold a KV cache.")
    ]
    ssm_layers: Annotated[
        int,
        Meta(
            description="Mamba-2 (state-space) layers of a hybrid model: each holds a fixed "
            "state per sequence instead of a KV cache; 0 for a transformer."
        ),
    ]
    hidden_size: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    ffn_size: int
    vocab_size: int
    max_context: int
    attention: str
    n_experts: int
    experts_per_token: int
    n_shared_experts: int
    moe_ffn_size: int
    first_k_dense_layers: int
    kv_lora_rank: int
    qk_rope_head_dim: int
    tie_embeddings: bool
    ffn_only_quantized: Annotated[
        bool,
        Meta(
            description="The published quantized checkpoint quantizes only the inner layers' "
            "MLPs; attention and the first and last layers stay 16-bit (Meta's Llama 3.1 405B "
            "FP8)."
        ),
    ]
    experts_only_quantized: Annotated[
        bool,
        Meta(
            description="The published quantized checkpoint quantizes only the routed experts; "
            "attention, the router and any dense MLP stay 16-bit (gpt-oss)."
        ),
    ]
    fp4_scale_block: Annotated[
        int,
        Meta(
            description="Weights per 8-bit scale when the weights are planned in fp4: 16 "
            "(NVFP4) or 32 (MXFP4, as gpt-oss publishes its experts)."
        ),
    ]
    checkpoint_precision: Annotated[
        str,
        Meta(
            description="Weight format of the publisher's checkpoint: what a plan or estimate "
            "that names no precision uses."
        ),
    ]
    aliases: list[str]
    source: str

    @classmethod
    def from_domain(cls, arch: ModelArch, aliases: list[str]) -> ModelOut:
        counts = param_counts(arch)
        return cls(
            id=arch.id,
            name=arch.name,
            params_b=arch.params_b,
            active_params_b=arch.active_params_b,
            computed_params_b=round(counts.total / 1e9, 3),
            n_layers=arch.n_layers,
            attention_layers=arch.n_attention_layers,
            ssm_layers=arch.ssm_layers,
            hidden_size=arch.hidden_size,
            n_heads=arch.n_heads,
            n_kv_heads=arch.n_kv_heads,
            head_dim=arch.head_dim,
            ffn_size=arch.ffn_size,
            vocab_size=arch.vocab_size,
            max_context=arch.max_context,
            attention=arch.attention,
            n_experts=arch.n_experts,
            experts_per_token=arch.experts_per_token,
            n_shared_experts=arch.n_shared_experts,
            moe_ffn_size=arch.moe_ffn_size,
            first_k_dense_layers=arch.first_k_dense_layers,
            kv_lora_rank=arch.kv_lora_rank,
            qk_rope_head_dim=arch.qk_rope_head_dim,
            tie_embeddings=arch.tie_embeddings,
            ffn_only_quantized=arch.ffn_only_quantized,
            experts_only_quantized=arch.experts_only_quantized,
            fp4_scale_block=arch.fp4_scale_block,
            checkpoint_precision=arch.checkpoint_precision,
            aliases=aliases,
            source=arch.source,
        )


class ModelListOut(WireOut, kw_only=True):
    count: int
    models: list[ModelOut]
