"""LLM presets, alias resolution, and the three model input forms of ``resolve_model``."""

from __future__ import annotations

import csv
import dataclasses
import math
from pathlib import Path

import pytest

from service.domain.errors import InvalidInput, UnknownModel
from service.domain.llm import PRESETS, param_counts, preset_ids, resolve_model
from service.domain.llm.hf_config import HF_LIMITS
from service.domain.llm.resolve import POPULAR_PRESETS

ROOT = Path(__file__).resolve().parents[2]

REQUIRED = [
    "llama-2-7b",
    "llama-2-13b",
    "llama-2-70b",
    "llama-3-8b",
    "llama-3-70b",
    "llama-3.1-8b",
    "llama-3.1-70b",
    "llama-3.3-70b",
    "llama-3.1-405b",
    "mistral-7b",
    "mixtral-8x7b",
    "mixtral-8x22b",
    "qwen2.5-7b",
    "qwen2.5-72b",
    "qwen3-30b-a3b",
    "qwen3-235b-a22b",
    "deepseek-v3",
    "llama-4-scout",
    "llama-4-maverick",
    "gpt-j-6b",
    "falcon-180b",
    "gemma-2-27b",
    "gpt-oss-120b",
    "gpt-oss-20b",
    "qwen3-8b",
    "qwen3-14b",
    "qwen3-32b",
    "glm-4.5-air",
    "glm-4.6",
    "deepseek-v3.2",
    "nemotron-3-nano-30b-a3b",
]

# What the publisher's headline *active* count leaves out, where it is not the full per-token
# count of ParamCounts.active. Read off the numbers: gpt-oss's 5.1B / 3.6B match the count
# without the input embedding table to within 1 % (with it: 5.71B / 4.19B); GLM's 12B / 32B
# match the count without embedding and output head (with them: 13.4B / 33.6B). Nemotron 3
# Nano's 3.2B active is the count without the input embedding ("3.6B including embeddings").
ACTIVE_HEADLINE_LEAVES_OUT: dict[str, tuple[str, ...]] = {
    "gpt-oss-120b": ("embedding",),
    "gpt-oss-20b": ("embedding",),
    "glm-4.5-air": ("embedding", "lm_head"),
    "glm-4.6": ("embedding", "lm_head"),
    "nemotron-3-nano-30b-a3b": ("embedding",),
}


def test_every_required_preset_exists() -> None:
    assert set(REQUIRED) <= set(preset_ids())


@pytest.mark.parametrize("pid", sorted(PRESETS))
def test_computed_parameter_counts_match_published(pid: str) -> None:
    arch = PRESETS[pid]
    pc = param_counts(arch)
    left_out = ACTIVE_HEADLINE_LEAVES_OUT.get(pid, ())
    active = pc.active - sum(getattr(pc, part) for part in left_out)
    assert pc.total / 1e9 == pytest.approx(arch.params_b, rel=0.03)
    assert active / 1e9 == pytest.approx(arch.active_params_b, rel=0.03)
    assert arch.source.startswith("hf:")


def test_active_headline_conventions_are_needed() -> None:
    # The full per-token count misses these headlines by more than 3 %: the convention matters.
    for pid in ACTIVE_HEADLINE_LEAVES_OUT:
        arch = PRESETS[pid]
        assert param_counts(arch).active / 1e9 > arch.active_params_b * 1.03, pid


@pytest.mark.parametrize(
    ("pid", "total_b", "active_b"),
    [
        ("qwen3-8b", 8.2, 8.2),
        ("qwen3-14b", 14.8, 14.8),
        ("qwen3-32b", 32.8, 32.8),
        ("gpt-oss-120b", 116.8, 5.1),
        ("gpt-oss-20b", 20.9, 3.6),
        ("nemotron-3-nano-30b-a3b", 31.6, 3.2),
    ],
)
def test_new_presets_match_published_counts_closely(
    pid: str, total_b: float, active_b: float
) -> None:
    pc = param_counts(PRESETS[pid])
    left_out = ACTIVE_HEADLINE_LEAVES_OUT.get(pid, ())
    active = pc.active - sum(getattr(pc, part) for part in left_out)
    assert pc.total / 1e9 == pytest.approx(total_b, rel=0.005)
    assert active / 1e9 == pytest.approx(active_b, rel=0.01)


@pytest.mark.parametrize(
    ("pid", "non_embedding_b"), [("qwen3-8b", 6.95), ("qwen3-14b", 13.2), ("qwen3-32b", 31.2)]
)
def test_qwen3_dense_non_embedding_counts(pid: str, non_embedding_b: float) -> None:
    pc = param_counts(PRESETS[pid])
    assert (pc.total - pc.embedding - pc.lm_head) / 1e9 == pytest.approx(non_embedding_b, rel=0.01)


def test_mixtral_total_and_active() -> None:
    pc = param_counts(PRESETS["mixtral-8x7b"])
    assert pc.total / 1e9 == pytest.approx(46.7, rel=0.01)
    assert pc.active / 1e9 == pytest.approx(12.9, rel=0.01)


def test_moe_layer_layouts() -> None:
    assert PRESETS["deepseek-v3"].n_moe_layers == 58  # first 3 dense
    assert PRESETS["deepseek-v3.2"].n_moe_layers == 58
    assert PRESETS["llama-4-maverick"].n_moe_layers == 24  # every second layer
    assert PRESETS["llama-4-scout"].n_moe_layers == 48
    assert PRESETS["llama-3.1-8b"].n_moe_layers == 0
    assert PRESETS["glm-4.5-air"].n_moe_layers == 45  # first_k_dense_replace 1
    assert PRESETS["glm-4.6"].n_moe_layers == 89  # first_k_dense_replace 3
    assert PRESETS["gpt-oss-120b"].n_moe_layers == 36  # every layer
    assert PRESETS["gpt-oss-20b"].n_moe_layers == 24
    assert PRESETS["qwen3-32b"].n_moe_layers == 0


def test_hybrid_layer_layout() -> None:
    """Nemotron 3 Nano's 52 residual blocks: 23 Mamba-2, 23 MoE, 6 attention (its
    hybrid_override_pattern), and the 3.6B "including embeddings" of its report."""
    arch = PRESETS["nemotron-3-nano-30b-a3b"]
    pattern = "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME"
    assert arch.ssm_layers == pattern.count("M") == 23
    assert arch.n_moe_layers == pattern.count("E") == 23
    assert arch.n_attention_layers == pattern.count("*") == 6
    assert arch.n_sublayers == len(pattern) == 52
    assert param_counts(arch).active / 1e9 == pytest.approx(3.6, rel=0.01)
    # an ordinary transformer: every layer has attention, two residual blocks each
    llama = PRESETS["llama-3.1-8b"]
    assert (llama.n_attention_layers, llama.ssm_layers, llama.n_sublayers) == (32, 0, 64)


def test_gpt_oss_sliding_window_layers_recorded() -> None:
    # layer_types alternate sliding_attention / full_attention; sliding_window 128
    for pid, layers in (("gpt-oss-120b", 36), ("gpt-oss-20b", 24)):
        a = PRESETS[pid]
        assert (a.n_layers, a.sliding_window, a.sliding_window_layers) == (layers, 128, layers // 2)


def test_deepseek_v32_keeps_the_v3_shapes() -> None:
    v3, v32 = PRESETS["deepseek-v3"], PRESETS["deepseek-v3.2"]
    assert dataclasses.replace(v32, id=v3.id, name=v3.name) == v3
    assert v32.source == "hf:deepseek-ai/DeepSeek-V3.2/config.json"


# KV-cache bytes per token of one replica at 16 bits, by hand from config.json, against the
# element count the performance model multiplies by bytes per element and shards.
def test_kv_bytes_per_token_gqa_qwen3_8b() -> None:
    # 36 layers x 2 (K, V) x 8 KV heads x head_dim 128 x 2 bytes = 147,456 B
    a = PRESETS["qwen3-8b"]
    assert a.n_layers * a.kv_elements_per_token_layer * 2 == 36 * 2 * 8 * 128 * 2 == 147_456


def test_kv_bytes_per_token_gqa_head_dim_not_hidden_over_heads() -> None:
    # gpt-oss: head_dim 64 while hidden 2880 / 64 heads = 45; 24 x 2 x 8 x 64 x 2 = 49,152 B
    a = PRESETS["gpt-oss-20b"]
    assert a.n_layers * a.kv_elements_per_token_layer * 2 == 24 * 2 * 8 * 64 * 2 == 49_152
    # GLM-4.6: 92 layers x 2 x 8 KV heads x 128 x 2 bytes = 376,832 B
    g = PRESETS["glm-4.6"]
    assert g.n_layers * g.kv_elements_per_token_layer * 2 == 92 * 2 * 8 * 128 * 2 == 376_832


def test_kv_bytes_per_token_mla_deepseek_v32() -> None:
    # 61 layers x (kv_lora_rank 512 + qk_rope_head_dim 64) x 2 bytes = 70,272 B (the indexer's
    # own key cache is not counted)
    a = PRESETS["deepseek-v3.2"]
    assert a.attention == "mla"
    assert a.n_layers * a.kv_elements_per_token_layer * 2 == 61 * (512 + 64) * 2 == 70_272


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("Llama-3.1-70B", "llama-3.1-70b"),
        ("meta-llama/Llama-3.1-70B-Instruct", "llama-3.1-70b"),
        ("meta-llama/Meta-Llama-3-8B-Instruct", "llama-3-8b"),
        ("Mixtral-8x7B", "mixtral-8x7b"),
        ("mistralai/Mixtral-8x7B-Instruct-v0.1", "mixtral-8x7b"),
        ("Llama-4-Scout-17B-16E", "llama-4-scout"),
        ("meta-llama/Llama-4-Maverick-17B-128E-Instruct-FP8", "llama-4-maverick"),
        ("Qwen3-30B-A3B", "qwen3-30b-a3b"),
        ("nvidia/Qwen3-235B-A22B-FP4", "qwen3-235b-a22b"),
        ("LLAMA-2-7B-HF", "llama-2-7b"),
        ("deepseek-ai/DeepSeek-V3", "deepseek-v3"),
        ("google/gemma-2-27b-it", "gemma-2-27b"),
        ("EleutherAI/gpt-j-6b", "gpt-j-6b"),
        ("tiiuae/falcon-180B", "falcon-180b"),
        # model ids as they appear in the published serving measurements
        ("openai/gpt-oss-120b", "gpt-oss-120b"),
        ("openai/gpt-oss-20b", "gpt-oss-20b"),
        ("zai-org/GLM-4.5-Air", "glm-4.5-air"),
        ("zai-org/GLM-4.5-Air-FP8", "glm-4.5-air"),
        ("zai-org/GLM-4.6", "glm-4.6"),
        ("Qwen/Qwen3-235B-A22B-Instruct-2507", "qwen3-235b-a22b"),
        ("Qwen/Qwen3-8B", "qwen3-8b"),
        ("Qwen/Qwen3-14B", "qwen3-14b"),
        ("Qwen/Qwen3-32B", "qwen3-32b"),
        ("qwen/qwen3-32b-fp8", "qwen3-32b"),
        ("deepseek-ai/DeepSeek-V3.2", "deepseek-v3.2"),
        ("deepseek-ai/DeepSeek-V3.2-Exp", "deepseek-v3.2"),
        ("deepseek-ai/DeepSeek-V3.1", "deepseek-v3"),
        ("deepseek-ai/DeepSeek-V3.1-Terminus", "deepseek-v3"),
        ("deepseek-ai/DeepSeek-R1-0528", "deepseek-v3"),
        ("meta-llama/Llama-3.1-405B-Instruct", "llama-3.1-405b"),
        ("amd/Llama-3.1-405B-Instruct-FP8-KV", "llama-3.1-405b"),
        # Meta's FP8 checkpoint keeps attention 16-bit; other publishers' FP8 405B does not
        ("meta-llama/Llama-3.1-405B-Instruct-FP8", "llama-3.1-405b-fp8"),
        ("meta-llama/Llama-3.1-405B-FP8", "llama-3.1-405b-fp8"),
        ("Llama-3.1-405B-FP8", "llama-3.1-405b-fp8"),
        ("nvidia/Llama-3.1-405B-Instruct-FP8", "llama-3.1-405b"),
        ("amd/Llama-3.1-70B-Instruct-FP8-KV", "llama-3.1-70b"),
        ("meta-llama/Meta-Llama-3.1-8B-Instruct", "llama-3.1-8b"),
    ],
)
def test_aliases_resolve_case_insensitively(name: str, expected: str) -> None:
    assert resolve_model(name).arch.id == expected
    assert resolve_model(name.upper()).arch.id == expected


def test_every_calibration_csv_model_label_resolves() -> None:
    with (ROOT / "service" / "data" / "calibration.csv").open(encoding="utf-8") as fh:
        labels = {r["model"] for r in csv.DictReader(fh)}
    assert labels
    for label in labels:
        assert resolve_model(label).arch.id in PRESETS


def test_unknown_model_suggests_closest_ids() -> None:
    with pytest.raises(UnknownModel) as err:
        resolve_model("lama-3.1-70")
    assert "llama-3.1-70b" in err.value.suggestions
    assert err.value.field == "model"


def _unknown(name: str) -> UnknownModel:
    with pytest.raises(UnknownModel) as err:
        resolve_model(name)
    return err.value


def test_a_name_like_no_preset_gets_the_popular_presets() -> None:
    err = _unknown("nosuchthingzzz")
    assert err.suggestions == POPULAR_PRESETS
    assert all(s in PRESETS for s in POPULAR_PRESETS)
    assert "popular presets: " + ", ".join(POPULAR_PRESETS) in err.message
    assert "params_b" in err.message and "hf_config" in err.message


def test_an_unknown_family_gets_the_presets_nearest_the_size_it_states() -> None:
    err = _unknown("starcoder2-15b")
    sizes = [PRESETS[s].params_b for s in err.suggestions]
    assert len(err.suggestions) == 5
    # nearest first, on a log scale: 14.8B beats 13B beats 20.9B, never 671B
    gaps = [abs(math.log(size / 15)) for size in sizes]
    assert gaps == sorted(gaps)
    others = [
        abs(math.log(a.params_b / 15)) for p, a in PRESETS.items() if p not in err.suggestions
    ]
    assert max(gaps) <= min(others)
    assert "presets nearest 15B" in err.message


def test_a_known_family_at_an_unknown_size_stays_in_the_family() -> None:
    err = _unknown("qwen-99b")
    assert err.suggestions
    assert all(s.startswith("qwen") for s in err.suggestions)


@pytest.mark.parametrize(
    "name", ["nosuchthingzzz", "phi-3-mini", "starcoder2-15b", "yi-34b", "x", "0b", "zz-8x7b"]
)
def test_an_unknown_model_always_gets_suggestions(name: str) -> None:
    err = _unknown(name)
    assert 0 < len(err.suggestions) <= 5
    assert all(s in PRESETS for s in err.suggestions)


# --- hf_config ------------------------------------------------------------------------------

LLAMA2_7B = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 11008,
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 32,
    "max_position_embeddings": 4096,
    "vocab_size": 32000,
    "tie_word_embeddings": False,
    "torch_dtype": "float16",
}

LLAMA3_8B = {
    "_name_or_path": "meta-llama/Meta-Llama-3-8B",
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "max_position_embeddings": 8192,
    "rope_theta": 500000.0,
    "vocab_size": 128256,
    "tie_word_embeddings": False,
}

MIXTRAL_8X7B = {
    "architectures": ["MixtralForCausalLM"],
    "model_type": "mixtral",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "num_local_experts": 8,
    "num_experts_per_tok": 2,
    "max_position_embeddings": 32768,
    "sliding_window": None,
    "vocab_size": 32000,
    "tie_word_embeddings": False,
}

DEEPSEEK_V3 = {
    "architectures": ["DeepseekV3ForCausalLM"],
    "model_type": "deepseek_v3",
    "hidden_size": 7168,
    "intermediate_size": 18432,
    "moe_intermediate_size": 2048,
    "num_attention_heads": 128,
    "num_key_value_heads": 128,
    "num_hidden_layers": 61,
    "n_routed_experts": 256,
    "n_shared_experts": 1,
    "num_experts_per_tok": 8,
    "first_k_dense_replace": 3,
    "kv_lora_rank": 512,
    "q_lora_rank": 1536,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "max_position_embeddings": 163840,
    "vocab_size": 129280,
    "tie_word_embeddings": False,
}


def test_hf_dense_llama2() -> None:
    r = resolve_model({"hf_config": LLAMA2_7B})
    a = r.arch
    assert (a.n_layers, a.hidden_size, a.n_heads, a.n_kv_heads, a.head_dim) == (
        32,
        4096,
        32,
        32,
        128,
    )
    assert a.attention == "mha"
    assert a.params_b == pytest.approx(6.74, rel=0.01)
    assert any("computed" in n for n in r.assumptions)


def test_hf_gqa_llama3() -> None:
    a = resolve_model({"hf_config": LLAMA3_8B}).arch
    assert a.attention == "gqa"
    assert a.n_kv_heads == 8
    assert a.kv_elements_per_token_layer == 2 * 8 * 128
    assert a.params_b == pytest.approx(8.03, rel=0.01)
    assert a.id == "meta-llama-3-8b"


def test_hf_moe_mixtral() -> None:
    a = resolve_model({"hf_config": MIXTRAL_8X7B}).arch
    assert (a.n_experts, a.experts_per_token, a.moe_ffn_size) == (8, 2, 14336)
    assert a.params_b == pytest.approx(46.7, rel=0.01)
    assert a.active_params_b == pytest.approx(12.9, rel=0.01)


def test_hf_mla_deepseek_v3() -> None:
    a = resolve_model({"hf_config": DEEPSEEK_V3}).arch
    assert a.attention == "mla"
    assert a.kv_elements_per_token_layer == 512 + 64
    assert a.first_k_dense_layers == 3
    assert a.n_shared_experts == 1
    assert a.params_b == pytest.approx(671, rel=0.01)
    assert a.active_params_b == pytest.approx(37, rel=0.03)


# huggingface.co/nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16/config.json (the fields read)
NEMOTRON_3_NANO = {
    "_name_or_path": "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
    "model_type": "nemotron_h",
    "num_hidden_layers": 52,
    "hidden_size": 2688,
    "num_attention_heads": 32,
    "num_key_value_heads": 2,
    "head_dim": 128,
    "intermediate_size": 1856,
    "vocab_size": 131072,
    "max_position_embeddings": 262144,
    "tie_word_embeddings": False,
    "mlp_hidden_act": "relu2",
    "hybrid_override_pattern": "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME",
    "mamba_num_heads": 64,
    "mamba_head_dim": 64,
    "ssm_state_size": 128,
    "n_groups": 8,
    "conv_kernel": 4,
    "chunk_size": 128,
    "mamba_ssm_cache_dtype": "float32",
    "n_routed_experts": 128,
    "num_experts_per_tok": 6,
    "n_shared_experts": 1,
    "moe_intermediate_size": 1856,
    "moe_shared_expert_intermediate_size": 3712,
}
_NEMOTRON_KINDS = {"M": "mamba", "*": "attention", "E": "moe", "-": "mlp"}


def _shape_fields(arch: object) -> dict[str, object]:
    skip = {"id", "name", "params_b", "active_params_b", "source"}
    return {
        f.name: getattr(arch, f.name)
        for f in dataclasses.fields(arch)  # type: ignore[arg-type]
        if f.name not in skip and not f.name.startswith("_")
    }


def test_hf_nemotron_h_reads_as_the_preset() -> None:
    r = resolve_model({"hf_config": NEMOTRON_3_NANO})
    assert _shape_fields(r.arch) == _shape_fields(PRESETS["nemotron-3-nano-30b-a3b"])
    assert r.arch.params_b == pytest.approx(31.6, rel=0.01)
    assert any("23 Mamba-2, 6 attention, 23 MLP/MoE" in n for n in r.assumptions)
    # the same layers listed by name (newer configs) read the same
    listed = {k: v for k, v in NEMOTRON_3_NANO.items() if k != "hybrid_override_pattern"}
    pattern = str(NEMOTRON_3_NANO["hybrid_override_pattern"])
    listed["layers_block_type"] = [_NEMOTRON_KINDS[c] for c in pattern]
    assert _shape_fields(resolve_model({"hf_config": listed}).arch) == _shape_fields(r.arch)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"hybrid_override_pattern": "MEMX*E"}, "hf_config.hybrid_override_pattern"),
        ({"hybrid_override_pattern": "ME*E"}, "hf_config.num_hidden_layers"),
        ({"hybrid_override_pattern": "M*" * 26}, "hf_config.num_hidden_layers"),
        ({"layers_block_type": ["mamba", "conv"] * 26, "hybrid_override_pattern": None},
         "hf_config.layers_block_type"),
        ({"mamba_num_heads": None}, "hf_config.mamba_num_heads"),
        ({"mamba_num_heads": 60}, "hf_config.n_groups"),
    ],
)  # fmt: skip
def test_hf_bad_hybrid_layouts_name_the_field(change: dict[str, object], field: str) -> None:
    with pytest.raises(InvalidInput) as err:
        resolve_model({"hf_config": {**NEMOTRON_3_NANO, **change}})
    assert err.value.field == field


@pytest.mark.parametrize(
    "cfg",
    [
        # ibm-granite Granite 4.0 H (Mamba-2 mixers and attention, an MoE after each)
        {**MIXTRAL_8X7B, "model_type": "granitemoehybrid", "mamba_d_state": 128,
         "layer_types": ["mamba"] * 28 + ["attention"] * 4},
        # Qwen3-Next (Gated DeltaNet linear attention, full attention every 4th layer)
        {**MIXTRAL_8X7B, "model_type": "qwen3_next", "full_attention_interval": 4,
         "linear_num_value_heads": 32},
        # Jamba (Mamba layers, attention every 8th)
        {**MIXTRAL_8X7B, "model_type": "jamba", "attn_layer_period": 8},
    ],
)  # fmt: skip
def test_hf_other_hybrid_layouts_are_refused_not_misread(cfg: dict[str, object]) -> None:
    """Read as a transformer, a hybrid's recurrent layers would each be charged a KV cache
    (several times the real one) and none of their state: refused, naming the model_type."""
    with pytest.raises(InvalidInput) as err:
        resolve_model({"hf_config": cfg})
    assert err.value.field == "hf_config.model_type"
    assert "nemotron_h" in err.value.message


def test_hf_llama4_text_config_nesting() -> None:
    cfg = {
        "model_type": "llama4",
        "text_config": {
            "model_type": "llama4_text",
            "hidden_size": 5120,
            "intermediate_size": 8192,
            "intermediate_size_mlp": 16384,
            "num_attention_heads": 40,
            "num_key_value_heads": 8,
            "head_dim": 128,
            "num_hidden_layers": 48,
            "num_local_experts": 128,
            "num_experts_per_tok": 1,
            "interleave_moe_layer_step": 2,
            "attention_chunk_size": 8192,
            "vocab_size": 202048,
            "max_position_embeddings": 1048576,
        },
    }
    r = resolve_model({"hf_config": cfg})
    assert r.arch.params_b == pytest.approx(400, rel=0.03)
    assert r.arch.n_moe_layers == 24
    assert any("text_config" in n for n in r.assumptions)


def test_hf_gptj_and_falcon_key_spellings() -> None:
    gptj = {
        "model_type": "gptj",
        "n_embd": 4096,
        "n_layer": 28,
        "n_head": 16,
        "n_positions": 2048,
        "rotary_dim": 64,
        "vocab_size": 50400,
        "n_inner": None,
    }
    a = resolve_model({"hf_config": gptj}).arch
    assert (a.hidden_size, a.n_layers, a.ffn_size, a.gated_mlp) == (4096, 28, 16384, False)
    assert a.params_b == pytest.approx(6.05, rel=0.02)
    falcon = {
        "model_type": "falcon",
        "hidden_size": 14848,
        "num_hidden_layers": 80,
        "num_attention_heads": 232,
        "num_kv_heads": 8,
        "new_decoder_architecture": True,
        "vocab_size": 65024,
    }
    f = resolve_model({"hf_config": falcon}).arch
    assert f.n_kv_heads == 8
    assert f.tie_embeddings
    assert f.params_b == pytest.approx(180, rel=0.03)


def test_hf_missing_field_is_named() -> None:
    cfg = dict(LLAMA3_8B)
    del cfg["num_hidden_layers"]
    with pytest.raises(InvalidInput) as err:
        resolve_model({"hf_config": cfg})
    assert err.value.field == "hf_config.num_hidden_layers"


@pytest.mark.parametrize(
    ("cfg", "field"),
    [
        ({**DEEPSEEK_V3, "qk_rope_head_dim": None}, "hf_config.qk_rope_head_dim"),
        ({**DEEPSEEK_V3, "v_head_dim": 0}, "hf_config.v_head_dim"),
        ({**LLAMA3_8B, "vocab_size": None}, "hf_config.vocab_size"),
        ({**LLAMA3_8B, "num_hidden_layers": 31.5}, "hf_config.num_hidden_layers"),
        ({**LLAMA3_8B, "hidden_size": "4096"}, "hf_config.hidden_size"),
        ({**MIXTRAL_8X7B, "num_experts_per_tok": None}, "hf_config.num_experts_per_tok"),
    ],
)
def test_hf_bad_or_missing_numbers_name_the_field(cfg: dict[str, object], field: str) -> None:
    with pytest.raises(InvalidInput) as err:
        resolve_model({"hf_config": cfg})
    assert err.value.field == field


# Spellings of one quantity, in the order the reader tries them (a later one is read only when
# the earlier ones are absent).
HF_SPELLINGS = [
    ("num_hidden_layers", "n_layer", "num_layers", "n_layers"),
    ("hidden_size", "n_embd", "d_model"),
    ("num_attention_heads", "n_head", "num_heads"),
    ("num_key_value_heads", "num_kv_heads", "n_head_kv"),
    ("intermediate_size", "n_inner", "ffn_hidden_size"),
    ("max_position_embeddings", "n_positions", "seq_length", "max_seq_len"),
    ("num_local_experts", "num_experts", "n_routed_experts"),
    ("num_experts_per_tok", "num_experts_per_token", "moe_top_k"),
    ("n_shared_experts", "num_shared_experts"),
]
HF_READ_BY = {  # keys read only for some families
    "intermediate_size_mlp": {**MIXTRAL_8X7B, "model_type": "llama4_text"},
    "interleave_moe_layer_step": {**MIXTRAL_8X7B, "model_type": "llama4_text"},
    "decoder_sparse_step": {**MIXTRAL_8X7B, "model_type": "qwen3_moe"},
    **dict.fromkeys(
        (
            "mamba_num_heads",
            "mamba_head_dim",
            "ssm_state_size",
            "n_groups",
            "conv_kernel",
            "chunk_size",
            "moe_shared_expert_intermediate_size",
        ),
        NEMOTRON_3_NANO,
    ),
}


def config_reading(key: str) -> dict[str, object]:
    """A config in which the reader reads ``key`` (its earlier spellings removed)."""
    if key in HF_READ_BY:
        cfg = dict(HF_READ_BY[key])
    elif key in DEEPSEEK_V3 or key in ("n_routed_experts", "moe_intermediate_size"):
        cfg = dict(DEEPSEEK_V3)
    elif "expert" in key or key == "moe_top_k":
        cfg = dict(MIXTRAL_8X7B)
    else:
        cfg = dict(LLAMA3_8B)
    for spellings in HF_SPELLINGS:
        if key in spellings:
            for other in spellings:
                cfg.pop(other, None)
    return cfg


@pytest.mark.parametrize("key", sorted(HF_LIMITS))
def test_every_hf_number_read_is_bounded(key: str) -> None:
    cfg = config_reading(key)
    limit = HF_LIMITS[key]
    with pytest.raises(InvalidInput) as err:
        resolve_model({"hf_config": {**cfg, key: limit + 1}})
    assert err.value.field == f"hf_config.{key}"
    assert f"{limit:,}" in err.value.message


@pytest.mark.parametrize("value", [1e308, 10**30])
@pytest.mark.parametrize("key", ["vocab_size", "intermediate_size", "head_dim", "n_routed_experts"])
def test_huge_hf_numbers_are_a_422_naming_the_field(key: str, value: float) -> None:
    with pytest.raises(InvalidInput) as err:
        resolve_model({"hf_config": {**config_reading(key), key: value}})
    assert err.value.field == f"hf_config.{key}"


@pytest.mark.parametrize("key", sorted(HF_LIMITS))
def test_hf_bounds_are_above_every_preset(key: str) -> None:
    largest = {
        "max_position_embeddings": max(a.max_context for a in PRESETS.values()),
        "vocab_size": max(a.vocab_size for a in PRESETS.values()),
        "num_hidden_layers": max(a.n_layers for a in PRESETS.values()),
        "hidden_size": max(a.hidden_size for a in PRESETS.values()),
        "intermediate_size": max(a.ffn_size for a in PRESETS.values()),
        "num_local_experts": max(a.n_experts for a in PRESETS.values()),
        "num_attention_heads": max(a.n_heads for a in PRESETS.values()),
    }
    assert HF_LIMITS[key] >= largest.get(key, 0)


@pytest.mark.parametrize(
    ("cfg", "field"),
    [
        ({**LLAMA3_8B, "rope_scaling": {"factor": 10**30}}, "hf_config.rope_scaling.factor"),
        ({**LLAMA3_8B, "bad_token_ids": [1, -(2**70)]}, "hf_config.bad_token_ids[1]"),
    ],
)
def test_numbers_the_reader_ignores_must_still_fit_64_bits(
    cfg: dict[str, object], field: str
) -> None:
    with pytest.raises(InvalidInput) as err:
        resolve_model({"hf_config": cfg})
    assert err.value.field == field


def test_hf_whole_float_counts_are_accepted() -> None:
    a = resolve_model({"hf_config": {**LLAMA3_8B, "num_hidden_layers": 32.0}}).arch
    assert a.n_layers == 32
    assert isinstance(a.n_layers, int)


def test_hf_inconsistent_heads_are_rejected() -> None:
    cfg = {**LLAMA3_8B, "num_key_value_heads": 6}
    with pytest.raises(InvalidInput) as err:
        resolve_model({"hf_config": cfg})
    assert err.value.field == "hf_config.n_kv_heads"


# --- {"params_b": ...} ------------------------------------------------------------------------


@pytest.mark.parametrize("size", [1, 7, 13, 34, 70, 180, 405])
def test_params_b_derivation_matches_size(size: float) -> None:
    r = resolve_model({"params_b": size})
    a = r.arch
    assert param_counts(a).total / 1e9 == pytest.approx(size, rel=0.03)
    assert a.n_heads % a.n_kv_heads == 0
    assert a.head_dim == 128
    assert any("n_layers" in n for n in r.assumptions)
    assert any("hidden_size" in n for n in r.assumptions)


def test_params_b_with_given_fields_keeps_them() -> None:
    r = resolve_model({"params_b": 70, "n_layers": 80, "hidden_size": 8192, "vocab_size": 128256})
    a = r.arch
    assert (a.n_layers, a.hidden_size, a.n_kv_heads) == (80, 8192, 8)
    assert a.ffn_size == pytest.approx(28672, rel=0.03)
    assert not any("n_layers" in n for n in r.assumptions)


def test_params_b_moe() -> None:
    r = resolve_model(
        {"params_b": 47, "n_experts": 8, "experts_per_token": 2, "active_params_b": 13}
    )
    a = r.arch
    assert a.is_moe
    assert param_counts(a).total / 1e9 == pytest.approx(47, rel=0.03)


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"params_b": -3}, "params_b"),
        ({"params_b": "big"}, "params_b"),
        ({"params_b": 7, "n_heads": 32, "n_kv_heads": 6}, "n_kv_heads"),
        ({"params_b": 7, "layers": 32}, "model.layers"),
        ({"params_b": 7, "n_experts": 8, "experts_per_token": 9}, "experts_per_token"),
        ({"size": 7}, "model.params_b"),
    ],
)
def test_invalid_numbers_name_the_field(spec: dict[str, object], field: str) -> None:
    with pytest.raises(InvalidInput) as err:
        resolve_model(spec)
    assert err.value.field == field
