"""gpt-oss publishes only its routed experts in MXFP4 (4-bit values, one 8-bit power-of-two
scale per 32 of them); attention, the router, the embedding and the head stay BF16. The
weights the model plans must then add up to the checkpoint OpenAI publishes (the gpt-oss model
card: 60.8 GiB for gpt-oss-120b, 12.8 GiB for gpt-oss-20b), and a decode step at batch 1 must
stream the 16-bit attention as 16-bit. Each expectation follows from the byte count, not from a
fitted constant."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from service.domain.llm import PRESETS, ModelArch, param_counts
from service.domain.llm.hf_config import hf_arch
from service.domain.perfmodel import Deployment, RequestShape, estimate
from service.domain.perfmodel.calibration import PUBLIC_PROFILES, default_calibration
from service.domain.perfmodel.coefficients import Setup, body_16bit, build_setup
from service.domain.perfmodel.hardware import fp4_weight_bytes, precision_plan
from service.domain.perfmodel.memory import kv_pool_bytes
from tests.unit.perfmodel.gpu_fixtures import GPUS
from tests.unit.perfmodel.physics import dep
from tests.unit.test_checkpoint_precision import LLAMA_CONFIG

GIB = 2**30
OSS_120B = PRESETS["gpt-oss-120b"]
OSS_20B = PRESETS["gpt-oss-20b"]
D = dep("h100-sxm", tp=1, prec="fp4")


def _setup(model: ModelArch, d: Deployment = D) -> Setup:
    return build_setup(model, d, PUBLIC_PROFILES["vllm"], default_calibration())


def _all_fp4(model: ModelArch) -> ModelArch:
    """The same model as if every body weight were quantized (NVFP4's scales)."""
    return replace(model, experts_only_quantized=False, fp4_scale_block=16)


@pytest.mark.parametrize(
    ("model", "published_gib"),
    [(OSS_120B, 60.8), (OSS_20B, 12.8)],
)
def test_weights_add_up_to_the_published_checkpoint(model: ModelArch, published_gib: float) -> None:
    # experts x 0.53125 B + (attention, router, embedding, head) x 2 B; norms, biases and
    # attention sinks (< 0.01% of the parameters) are not counted
    assert _setup(model).weights_replica_b / GIB == pytest.approx(published_gib, rel=0.005)
    # the NVFP4 rate on every body weight would miss the published size by several percent
    assert (
        abs(_setup(_all_fp4(model)).weights_replica_b / GIB - published_gib) > 0.02 * published_gib
    )


def test_mxfp4_stores_one_scale_byte_per_32_weights() -> None:
    assert fp4_weight_bytes(32) == 0.5 + 1 / 32
    assert fp4_weight_bytes(16) == 0.5 + 1 / 16  # NVFP4's FP8 scale per 16
    h100 = GPUS["h100-sxm"]
    assert precision_plan(h100, "fp4", 32).weight_bytes == fp4_weight_bytes(32)
    assert precision_plan(h100, "fp4").weight_bytes == fp4_weight_bytes(16)
    assert precision_plan(h100, "fp8", 32).weight_bytes == 1.0  # only FP4 has the choice


def test_16bit_part_is_everything_but_the_routed_experts() -> None:
    pc = param_counts(OSS_120B)
    assert body_16bit(OSS_120B, pc) == pc.body
    # 36 layers x 2880 x (4096 query + 2 x 512 key/value + 4096 output) = 0.956B of attention,
    # 36 x 2880 x 128 = 13M of router
    assert pc.attention == pytest.approx(36 * 2880 * (4096 + 1024 + 4096), rel=0.01)
    assert pc.body - pc.attention == pytest.approx(36 * 2880 * 128, rel=0.01)
    assert body_16bit(_all_fp4(OSS_120B), pc) == 0.0


def test_the_16bit_body_takes_room_from_the_kv_cache() -> None:
    oss, quantized = _setup(OSS_120B), _setup(replace(OSS_120B, experts_only_quantized=False))
    pc = param_counts(OSS_120B)
    extra = pc.body * (2.0 - fp4_weight_bytes(32))
    assert oss.weights_b - quantized.weights_b == pytest.approx(extra, rel=1e-9)
    pool_diff = kv_pool_bytes(quantized, 2048, 2048) - kv_pool_bytes(oss, 2048, 2048)
    assert pool_diff == pytest.approx(extra, rel=0.02)


def test_a_batch_of_one_streams_the_attention_in_16_bits() -> None:
    shape = RequestShape(128, 1024)
    oss = estimate(OSS_120B, D, shape, concurrency=1)
    quantized = estimate(replace(OSS_120B, experts_only_quantized=False), D, shape, concurrency=1)
    # one sequence reads its 4 of 128 experts, the body and the head each step: more bytes
    # per step, so a slower step, but never more than in proportion to the weight bytes
    pc, wb = param_counts(OSS_120B), fp4_weight_bytes(32)
    experts_and_head = pc.experts_total * 4 / 128 * wb + pc.lm_head * 2.0
    streamed = (experts_and_head + pc.body * 2.0) / (experts_and_head + pc.body * wb)
    assert 1.25 < streamed < 1.5
    assert 1.0 < oss.tpot_ms / quantized.tpot_ms <= streamed


def test_16bit_weights_are_unchanged() -> None:
    d16 = dep("h100-sxm", tp=2, prec="bf16")
    assert _setup(OSS_120B, d16).weights_b == _setup(_all_fp4(OSS_120B), d16).weights_b


def test_estimates_say_what_stays_16bit() -> None:
    est = estimate(OSS_120B, D, RequestShape(128, 128), concurrency=1)
    assert any(
        "keeps attention and the router 16-bit" in n and "routed experts are fp4" in n
        for n in est.assumptions
    )
    assert any("0.531 B/weight" in n for n in est.assumptions)


GPT_OSS_CONFIG: dict[str, Any] = {
    "architectures": ["GptOssForCausalLM"],
    "model_type": "gpt_oss",
    "num_hidden_layers": 24,
    "hidden_size": 2880,
    "num_attention_heads": 64,
    "num_key_value_heads": 8,
    "head_dim": 64,
    "intermediate_size": 2880,
    "num_local_experts": 32,
    "num_experts_per_tok": 4,
    "vocab_size": 201088,
    "max_position_embeddings": 131072,
    "sliding_window": 128,
    "layer_types": ["sliding_attention", "full_attention"] * 12,
    "tie_word_embeddings": False,
    "quantization_config": {
        "quant_method": "mxfp4",
        "modules_to_not_convert": [
            "model.layers.*.self_attn",
            "model.layers.*.mlp.router",
            "model.embed_tokens",
            "lm_head",
        ],
    },
}


def test_a_pasted_gpt_oss_config_plans_as_the_preset() -> None:
    arch, _ = hf_arch(GPT_OSS_CONFIG)
    assert (arch.checkpoint_precision, arch.experts_only_quantized, arch.fp4_scale_block) == (
        "fp4",
        True,
        32,
    )
    assert _setup(arch).weights_replica_b == pytest.approx(_setup(OSS_20B).weights_replica_b, 1e-3)


def test_a_checkpoint_that_quantizes_attention_too_is_planned_whole() -> None:
    q = {"quant_method": "mxfp4", "modules_to_not_convert": ["lm_head"]}
    arch, _ = hf_arch({**GPT_OSS_CONFIG, "quantization_config": q})
    assert (arch.experts_only_quantized, arch.fp4_scale_block) == (False, 32)
    nvfp4 = {"quant_method": "modelopt", "quant_algo": "NVFP4", "exclude_modules": ["*self_attn*"]}
    arch, _ = hf_arch({**GPT_OSS_CONFIG, "quantization_config": nvfp4})
    assert (arch.checkpoint_precision, arch.experts_only_quantized) == ("fp4", True)
    assert arch.fp4_scale_block == 16


def test_the_assumptions_name_what_stays_unconverted() -> None:
    _, notes = hf_arch(GPT_OSS_CONFIG)
    assert any("leaves the attention unconverted" in n for n in notes)
    assert not any("more module pattern" in n for n in notes)  # router, embedding, head: counted
    dense = {
        **LLAMA_CONFIG,
        "quantization_config": {
            "quant_method": "fbgemm_fp8",
            "modules_to_not_convert": ["model.layers.0.mlp", "model.layers.125.mlp", "lm_head"],
        },
    }
    ct = {"quant_method": "compressed-tensors", "format": "float-quantized"}
    _, notes = hf_arch(
        {**GPT_OSS_CONFIG, "quantization_config": {**ct, "ignore": ["lm_head", "re:.*mlp.gate$"]}}
    )
    assert not any("unconverted" in n for n in notes)  # the routers are counted 16-bit already
    arch, notes = hf_arch(dense)
    assert (arch.checkpoint_precision, arch.experts_only_quantized) == ("fp8", False)
    assert any(
        "leaves 2 more module pattern(s) unconverted (model.layers.0.mlp, ...)" in n for n in notes
    )
