"""Sliding-window attention, from the model's structure (no fitted number involved).

gpt-oss alternates 128-token sliding-window layers with full-attention layers. A window layer
never looks further back than its window, so:

* its decode reads and FLOPs stop growing once the context passes the window: the growth of an
  iteration's time with context comes from the full-attention layers alone;
* an engine that sizes the window layers' cache to the window (vLLM >= 0.10, SGLang >= 0.5,
  TensorRT-LLM's PyTorch backend) holds about half the KV per long sequence of an engine that
  allocates every layer at full length, so about twice the sequences fit.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from service.domain.llm import PRESETS
from service.domain.perfmodel import Deployment, RequestShape, estimate
from service.domain.perfmodel.calibration import (
    PUBLIC_PROFILES,
    default_calibration,
    serving_structure,
)
from service.domain.perfmodel.coefficients import Setup, build_setup, window_layers
from service.domain.perfmodel.iteration import iteration_time
from service.domain.perfmodel.memory import memory_batch_cap, sequence_kv_bytes
from tests.unit.perfmodel.gpu_fixtures import GPUS

GPT_OSS = PRESETS["gpt-oss-20b"]
DEP = Deployment(GPUS["h100-sxm"], 1, "fp8", "bf16", "vllm")


def _setups() -> tuple[Setup, Setup]:
    cal = default_calibration()
    windowed = PUBLIC_PROFILES["vllm"]
    assert windowed.window_kv
    full = replace(windowed, window_kv=False)
    return build_setup(GPT_OSS, DEP, windowed, cal), build_setup(GPT_OSS, DEP, full, cal)


def test_half_the_layers_of_gpt_oss_are_window_layers() -> None:
    assert GPT_OSS.sliding_window == 128
    assert window_layers(GPT_OSS) == GPT_OSS.n_layers // 2


def test_window_sized_cache_holds_half_the_kv_of_a_long_sequence() -> None:
    win, full = _setups()
    tokens = 16_384.0
    ratio = sequence_kv_bytes(win, tokens) / sequence_kv_bytes(full, tokens)
    # full layers hold every token, window layers 128 of them
    assert ratio == pytest.approx((tokens + 128) / (2 * tokens), rel=1e-9)
    # a sequence shorter than the window costs the same either way
    assert sequence_kv_bytes(win, 100.0) == pytest.approx(sequence_kv_bytes(full, 100.0))


def test_twice_the_long_sequences_fit_when_the_cache_is_window_sized() -> None:
    win, full = _setups()
    cap_win = memory_batch_cap(win, 8192, 8192)
    cap_full = memory_batch_cap(full, 8192, 8192)
    assert 1.9 < cap_win / cap_full <= 2.0


def test_decode_time_grows_with_context_only_through_full_layers() -> None:
    win, full = _setups()
    b = 64.0
    grow_win = iteration_time(win, b, 0.0, 8000.0, 1) - iteration_time(win, b, 0.0, 4000.0, 1)
    grow_full = iteration_time(full, b, 0.0, 8000.0, 1) - iteration_time(full, b, 0.0, 4000.0, 1)
    # the cache allocation does not change what attention reads
    assert grow_win == pytest.approx(grow_full, rel=1e-9)
    # a model without windows: every layer's reads grow with context
    no_window = replace(GPT_OSS, sliding_window=0, sliding_window_layers=0)
    prof = PUBLIC_PROFILES["vllm"]
    plain = build_setup(no_window, DEP, prof, default_calibration())
    grow_plain = iteration_time(plain, b, 0.0, 8000.0, 1) - iteration_time(plain, b, 0.0, 4000.0, 1)
    assert grow_win == pytest.approx(grow_plain / 2, rel=0.02)


def test_engines_before_window_sized_caches_allocate_full_length() -> None:
    assert not serving_structure("vllm", "0.9").window_kv
    assert serving_structure("vllm", "0.10").window_kv
    assert not serving_structure("sglang", "0.4").window_kv
    assert serving_structure("sglang", "0.5").window_kv


def test_estimate_says_how_window_layers_are_held() -> None:
    est = estimate(GPT_OSS, DEP, RequestShape(2048, 512))
    assert any("128 tokens on 12 of 24 layers" in a and "its window" in a for a in est.assumptions)
