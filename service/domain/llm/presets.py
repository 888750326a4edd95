"""The preset table: architectures of widely served LLMs, as data.

Each value is read from the model's Hugging Face ``config.json`` (path in ``source``);
``params_b``/``active_params_b`` are the publisher's headline counts (model card / safetensors
metadata). Values were cross-checked against copies of these configs in public repositories
found with the project's code search (e.g. NVIDIA/TensorRT-LLM tests for Llama 4 Maverick).

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


def preset_ids() -> tuple[str, ...]:
    """All preset ids, in declaration order."""
    return tuple(PRESETS)
