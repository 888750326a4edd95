"""The preset table: architectures of widely served LLMs, as data.

Each value is read from the model's Hugging Face ``config.json`` (path in ``source``);
``params_b``/``active_params_b`` are the publisher's headline counts (model card / safetensors
metadata). Values were cross-checked against copies of these configs in public repositories
found with the project's code search (e.g. NVIDIA/TensorRT-LLM tests for Llama 4 Maverick; the
EchoCog/gpt-oss-20b mirror of the gpt-oss-20b repository; Hugging Face copies of the Qwen3 dense,
GLM-4.5-Air and GLM-4.7 configs, the GLM-4.6 GGUF metadata, and the DeepSeek-V3.1 model card,
which states V3.1 keeps the V3 structure).

Headline *active* counts follow each publisher's convention, which is not always the one
:func:`~service.domain.llm.arch.param_counts` uses (every weight a token touches, embedding and
LM head included): OpenAI's gpt-oss card leaves out the input embedding table, Zhipu's GLM cards
leave out the embedding table and the output head. The unit tests compare like with like.

Adding a model is adding one entry here (and, for other spellings of its name, an alias in
``names``).
"""

from __future__ import annotations

from dataclasses import replace

from service.domain.llm.arch import ModelArch

__all__ = ["PRESETS", "preset_ids"]


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


# huggingface.co/deepseek-ai/DeepSeek-V3/config.json (MTP module excluded: 671B main model).
# The published weights are FP8 (quantization_config: quant_method "fp8", 128x128 weight blocks).
# DeepSeek-V3.1 and R1/R1-0528 publish the same shapes (aliases in ``names``); DeepSeek-V3.2 adds
# a sparse-attention indexer (its preset below).
_DEEPSEEK_V3 = ModelArch(
    id="deepseek-v3", name="DeepSeek-V3", params_b=671.0, active_params_b=37.0,
    n_layers=61, hidden_size=7168, n_heads=128, n_kv_heads=128, head_dim=128,
    ffn_size=18432, vocab_size=129280, max_context=163840, attention="mla",
    n_experts=256, experts_per_token=8, n_shared_experts=1, moe_ffn_size=2048,
    first_k_dense_layers=3, kv_lora_rank=512, qk_rope_head_dim=64, q_lora_rank=1536,
    qk_nope_head_dim=128, v_head_dim=128, checkpoint_precision="fp8",
    source="hf:deepseek-ai/DeepSeek-V3/config.json",
)  # fmt: skip

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
    # huggingface.co/meta-llama/Llama-3.1-405B-FP8: the same shapes; only the inner layers'
    # MLPs are FP8 (The Llama 3 Herd of Models, section 6.2, "FP8 quantization")
    replace(
        _llama("llama-3.1-405b-fp8", "Llama 3.1 405B FP8 (Meta's checkpoint)", 405.9, 126,
               16384, 128, 8, 53248, 128256, 131072,
               "hf:meta-llama/Llama-3.1-405B-FP8/config.json"),
        ffn_only_quantized=True,
        checkpoint_precision="fp8",
    ),
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
    _DEEPSEEK_V3,
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
    # huggingface.co/openai/gpt-oss-120b/config.json: 36 layers alternating 128-token sliding
    # window and full attention (layer_types: 18 x [sliding, full]), per-head attention sinks,
    # 128 experts top-4 of intermediate 2880, head_dim 64 (q width 4096 != hidden 2880). The
    # published checkpoint stores the experts in MXFP4 (quantization_config: quant_method
    # "mxfp4"; attention, router, embedding and head in BF16: modules_to_not_convert), planned
    # as fp4 experts with the rest 16-bit. Headline 116.8B
    # total / 5.1B active; the active count leaves out the embedding table. The sliding
    # layers' KV holds the window where the engine allocates it so (see ModelArch.sliding_window).
    ModelArch(
        id="gpt-oss-120b", name="gpt-oss-120b", params_b=116.8, active_params_b=5.1,
        n_layers=36, hidden_size=2880, n_heads=64, n_kv_heads=8, head_dim=64, ffn_size=2880,
        vocab_size=201088, max_context=131072, n_experts=128, experts_per_token=4,
        moe_ffn_size=2880, sliding_window=128, sliding_window_layers=18,
        checkpoint_precision="fp4", experts_only_quantized=True, fp4_scale_block=32,
        source="hf:openai/gpt-oss-120b/config.json",
    ),
    # huggingface.co/openai/gpt-oss-20b/config.json: as gpt-oss-120b with 24 layers
    # (12 x [sliding, full]) and 32 experts top-4. Headline 20.9B total / 3.6B active
    # (embedding table left out of the active count).
    ModelArch(
        id="gpt-oss-20b", name="gpt-oss-20b", params_b=20.9, active_params_b=3.6,
        n_layers=24, hidden_size=2880, n_heads=64, n_kv_heads=8, head_dim=64, ffn_size=2880,
        vocab_size=201088, max_context=131072, n_experts=32, experts_per_token=4,
        moe_ffn_size=2880, sliding_window=128, sliding_window_layers=12,
        checkpoint_precision="fp4", experts_only_quantized=True, fp4_scale_block=32,
        source="hf:openai/gpt-oss-20b/config.json",
    ),
    # huggingface.co/Qwen/Qwen3-8B/config.json (head_dim 128, untied embeddings; model card
    # 8.2B parameters, 6.95B non-embedding)
    ModelArch(
        id="qwen3-8b", name="Qwen3 8B", params_b=8.2, active_params_b=8.2, n_layers=36,
        hidden_size=4096, n_heads=32, n_kv_heads=8, head_dim=128, ffn_size=12288,
        vocab_size=151936, max_context=40960, source="hf:Qwen/Qwen3-8B/config.json",
    ),
    # huggingface.co/Qwen/Qwen3-14B/config.json (model card 14.8B, 13.2B non-embedding)
    ModelArch(
        id="qwen3-14b", name="Qwen3 14B", params_b=14.8, active_params_b=14.8, n_layers=40,
        hidden_size=5120, n_heads=40, n_kv_heads=8, head_dim=128, ffn_size=17408,
        vocab_size=151936, max_context=40960, source="hf:Qwen/Qwen3-14B/config.json",
    ),
    # huggingface.co/Qwen/Qwen3-32B/config.json (64 heads x head_dim 128 = 8192 != hidden 5120;
    # model card 32.8B, 31.2B non-embedding)
    ModelArch(
        id="qwen3-32b", name="Qwen3 32B", params_b=32.8, active_params_b=32.8, n_layers=64,
        hidden_size=5120, n_heads=64, n_kv_heads=8, head_dim=128, ffn_size=25600,
        vocab_size=151936, max_context=40960, source="hf:Qwen/Qwen3-32B/config.json",
    ),
    # huggingface.co/zai-org/GLM-4.5-Air/config.json (Glm4MoeForCausalLM: first layer dense,
    # 128 routed + 1 shared expert top-8; the MTP layer, num_nextn_predict_layers 1, excluded).
    # Headline 106B total / 12B active; the active count leaves out embedding and head.
    ModelArch(
        id="glm-4.5-air", name="GLM-4.5-Air", params_b=106.0, active_params_b=12.0,
        n_layers=46, hidden_size=4096, n_heads=96, n_kv_heads=8, head_dim=128, ffn_size=10944,
        vocab_size=151552, max_context=131072, n_experts=128, experts_per_token=8,
        n_shared_experts=1, moe_ffn_size=1408, first_k_dense_layers=1,
        source="hf:zai-org/GLM-4.5-Air/config.json",
    ),
    # huggingface.co/zai-org/GLM-4.6/config.json (GLM-4.5 architecture, context raised to
    # 202752: first 3 layers dense, 160 routed + 1 shared expert top-8; MTP layer excluded).
    # Headline 355B total / 32B active (embedding and head left out of the active count).
    ModelArch(
        id="glm-4.6", name="GLM-4.6", params_b=355.0, active_params_b=32.0, n_layers=92,
        hidden_size=5120, n_heads=96, n_kv_heads=8, head_dim=128, ffn_size=12288,
        vocab_size=151552, max_context=202752, n_experts=160, experts_per_token=8,
        n_shared_experts=1, moe_ffn_size=1536, first_k_dense_layers=3,
        source="hf:zai-org/GLM-4.6/config.json",
    ),
    # huggingface.co/deepseek-ai/DeepSeek-V3.2/config.json (DeepseekV32ForCausalLM): the
    # DeepSeek-V3 shapes plus the DeepSeek Sparse Attention indexer (index_n_heads 64,
    # index_head_dim 128, index_topk 2048). The MLA latent KV is still stored for every token;
    # beyond 2048 tokens of context each query attends to only the 2048 the indexer selects, so
    # core attention compute and latent reads per query stop growing with context (the indexer
    # still scores the whole context against its own small key cache). Not modelled here: that
    # indexer key cache (128 elements per token and layer beside the 576-element latent) and
    # the indexer weights (~0.85B); the MTP module is excluded as for DeepSeek-V3 (the 685B on
    # the model page includes it).
    replace(
        _DEEPSEEK_V3, id="deepseek-v3.2", name="DeepSeek-V3.2",
        source="hf:deepseek-ai/DeepSeek-V3.2/config.json",
    ),
    # huggingface.co/nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16/config.json (NemotronH: 52
    # layers, hybrid_override_pattern "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME":
    # 23 Mamba-2 mixers (M), 23 MoE blocks (E), 6 GQA attention layers (*), each its own
    # residual block; mamba_num_heads 64 x mamba_head_dim 64, ssm_state_size 128, n_groups 8,
    # conv_kernel 4, chunk_size 128, mamba_ssm_cache_dtype float32; 128 routed experts top-6
    # of 1856 plus one shared expert of 3712, squared-ReLU MLPs (two matrices); no positional
    # embedding, untied head). Headline 31.6B total, 3.2B active per token (3.6B with the
    # embedding table): NVIDIA's Nemotron 3 Nano technical report (arXiv 2512.20848).
    ModelArch(
        id="nemotron-3-nano-30b-a3b", name="Nemotron 3 Nano 30B-A3B", params_b=31.6,
        active_params_b=3.2, n_layers=23, hidden_size=2688, n_heads=32, n_kv_heads=2,
        head_dim=128, ffn_size=1856, vocab_size=131072, max_context=262144, gated_mlp=False,
        n_experts=128, experts_per_token=6, n_shared_experts=1, moe_ffn_size=1856,
        shared_expert_ffn_size=3712, attention_layers=6, ssm_layers=23, ssm_heads=64,
        ssm_head_dim=64, ssm_state_size=128, ssm_groups=8, ssm_conv_kernel=4,
        ssm_chunk_size=128, ssm_state_fp32=True,
        source="hf:nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16/config.json",
    ),
)  # fmt: skip

PRESETS: dict[str, ModelArch] = {m.id: m for m in _PRESET_LIST}


def preset_ids() -> tuple[str, ...]:
    """All preset ids, in declaration order."""
    return tuple(PRESETS)
