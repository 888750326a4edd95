"""A checkpoint that quantizes only the MLPs (Meta's Llama 3.1 405B FP8) carries its
attention and its first and last layers in 16-bit: more bytes of weights than the all-FP8
checkpoint of the same model, so less room for the KV cache and more bytes streamed per decode
step. Each expectation follows from the byte count, not from a fitted constant."""

from __future__ import annotations

from dataclasses import replace

import pytest

from service.domain.llm import PRESETS, ModelArch, param_counts
from service.domain.perfmodel import Deployment, RequestShape, estimate
from service.domain.perfmodel.calibration import PUBLIC_PROFILES, default_calibration
from service.domain.perfmodel.coefficients import Setup, body_16bit, build_setup
from service.domain.perfmodel.memory import kv_pool_bytes
from tests.unit.perfmodel.physics import dep

META = PRESETS["llama-3.1-405b-fp8"]
ALL_FP8 = PRESETS["llama-3.1-405b"]
D = dep("h100-sxm", tp=8, prec="fp8")


def _setup(model: ModelArch, d: Deployment = D) -> Setup:
    return build_setup(model, d, PUBLIC_PROFILES["vllm"], default_calibration())


def test_the_checkpoint_is_the_same_architecture() -> None:
    assert replace(META, id=ALL_FP8.id, name=ALL_FP8.name, source=ALL_FP8.source,
                   ffn_only_quantized=False, checkpoint_precision="bf16") == ALL_FP8  # fmt: skip


def test_16bit_part_is_attention_and_two_layers_of_mlp() -> None:
    pc = param_counts(META)
    mlp_per_layer = 3 * META.hidden_size * META.ffn_size
    assert body_16bit(META, pc) == pytest.approx(pc.attention + 2 * mlp_per_layer, rel=1e-9)
    # Llama 3.1 405B: about 70B attention parameters, and 5B in the two outer MLPs
    assert 65e9 < pc.attention < 75e9
    assert body_16bit(ALL_FP8, param_counts(ALL_FP8)) == 0.0


def test_weights_grow_by_one_byte_per_16bit_parameter() -> None:
    meta, fp8 = _setup(META), _setup(ALL_FP8)
    extra = body_16bit(META, param_counts(META))  # 2 bytes instead of 1
    assert meta.weights_replica_b - fp8.weights_replica_b == pytest.approx(extra, rel=1e-9)
    assert meta.weights_b - fp8.weights_b == pytest.approx(extra / 8, rel=1e-9)


def test_less_kv_cache_and_a_slower_memory_bound_decode() -> None:
    meta, fp8 = _setup(META), _setup(ALL_FP8)
    extra_card = body_16bit(META, param_counts(META)) / 8
    pool_meta = kv_pool_bytes(meta, 2048, 2048)
    pool_fp8 = kv_pool_bytes(fp8, 2048, 2048)
    # every byte of weights comes out of the KV pool (nothing else changes)
    assert pool_fp8 - pool_meta == pytest.approx(extra_card, rel=0.02)
    shape = RequestShape(128, 2048)
    one_meta = estimate(META, D, shape, concurrency=1)
    one_fp8 = estimate(ALL_FP8, D, shape, concurrency=1)
    # batch 1 decode streams the weights: TPOT grows with the bytes, at most in proportion
    ratio = meta.weights_b / fp8.weights_b
    assert 1.0 < one_meta.tpot_ms / one_fp8.tpot_ms <= ratio


def test_16bit_weights_are_unchanged() -> None:
    d16 = dep("h100-sxm", tp=8, prec="bf16")
    assert _setup(META, d16).weights_b == _setup(ALL_FP8, d16).weights_b


def test_estimates_say_what_stays_16bit() -> None:
    est = estimate(META, D, RequestShape(128, 128), concurrency=1)
    assert any("first and last layers 16-bit" in n for n in est.assumptions)
