"""Throughput at high concurrency is capped by what each engine allows BY DEFAULT on the card,
or by the KV cache, whichever binds first, and the estimate names that limit.

Defaults (sources in ``engine_limits``): vLLM V1 runs 1024 sequences with an 8192-token budget
on cards of at least 70 GiB that are not A100s and 256 / 2048 elsewhere; SGLang sizes its
static memory fraction and chunk from the card's memory and its running-request cap from the KV
pool; trtllm-serve runs up to 2048 requests with an 8192-token budget.
"""

from __future__ import annotations

import pytest

from service.domain.llm import PRESETS
from service.domain.perfmodel import RequestShape, estimate
from service.domain.perfmodel.calibration import PUBLIC_PROFILES, Calibration, default_calibration
from service.domain.perfmodel.coefficients import build_setup
from service.domain.perfmodel.engine_limits import (
    card_profile,
    sglang_memory_settings,
    sglang_running_requests,
    vllm_batch_defaults,
)
from service.domain.perfmodel.hardware import memory_bytes
from service.domain.perfmodel.memory import memory_batch_cap, token_budget_cap
from service.domain.perfmodel.serving import estimate_with
from service.domain.vocabulary import Bottleneck
from tests.unit.perfmodel.gpu_fixtures import GPUS
from tests.unit.perfmodel.physics import dep, perturbed

CALS = perturbed()


@pytest.mark.parametrize(
    ("gpu", "limits"),
    [
        ("h100-sxm", (1024, 8192)),
        ("h200-sxm", (1024, 8192)),
        ("b200", (1024, 8192)),
        ("a100-sxm-80gb", (256, 2048)),  # 80 GB, but an A100 (vLLM PR #17885)
        ("l40s", (256, 2048)),
        ("l4", (256, 2048)),
    ],
)
def test_vllm_defaults_follow_the_card(gpu: str, limits: tuple[int, int]) -> None:
    g = GPUS[gpu]
    assert vllm_batch_defaults(g.name, memory_bytes(g)) == limits
    m = PRESETS["llama-3.1-8b"]
    prof = card_profile(m, dep(gpu), PUBLIC_PROFILES["vllm"], default_calibration())
    assert (prof.max_batch, prof.max_num_tokens, prof.kv_fraction) == (*limits, 0.9)


@pytest.mark.parametrize(
    ("gpu", "fraction", "chunk"),
    [("h100-sxm", 0.835, 8192), ("h200-sxm", 0.906, 8192), ("b200", 0.857, 16384)],
)
def test_sglang_memory_fraction_follows_the_card(gpu: str, fraction: float, chunk: int) -> None:
    """SGLang reserves ~13 GiB of an 80 GB H100 for activations and CUDA graphs (0.835), so a
    141 GB H200 keeps a larger share (0.906) and a B200 a 16k chunk with a 26 GiB reserve."""
    assert sglang_memory_settings(memory_bytes(GPUS[gpu]), 1) == (fraction, chunk)


def test_sglang_running_requests_come_from_the_pool() -> None:
    assert sglang_running_requests(400_000, 131_072) == 2048  # 1562 slots, floor 2048
    assert sglang_running_requests(900_000, 131_072) == 3515
    assert sglang_running_requests(900_000, 4096) == 4096  # ceiling
    assert sglang_running_requests(3_000, 4096) == 1500  # half the pool


def _binding(model: str, gpu: str, engine: str, prec: str, shape: RequestShape, cal: Calibration):  # type: ignore[no-untyped-def]
    """(engine limit, KV cap, token-budget cap) from the physics modules directly."""
    m = PRESETS[model]
    d = dep(gpu, 1, prec, engine)
    prof = card_profile(m, d, PUBLIC_PROFILES[d.engine], cal)
    s = build_setup(m, d, prof, cal)
    lo = max(shape.output_tokens, 2)
    return (
        m,
        d,
        prof,
        s.max_batch,
        memory_batch_cap(s, shape.prompt_tokens, lo),
        int(token_budget_cap(s, shape.prompt_tokens, lo)),
    )


CASES = [
    # vLLM's 256 sequences on a 48 GB card bind before the KV cache
    ("llama-3.1-8b", "l40s", "vllm", "bf16", RequestShape(128, 128), "batch_limit"),
    # a 70B model on one H200 holds ~100 sequences of 3k tokens: the KV cache binds first
    ("llama-3.1-70b", "h200-sxm", "vllm", "fp8", RequestShape(2000, 2000), "kv_capacity"),
    ("llama-3.1-70b", "h200-sxm", "trtllm", "fp8", RequestShape(2000, 2000), "kv_capacity"),
    ("llama-3.1-70b", "h200-sxm", "sglang", "fp8", RequestShape(2000, 2000), "kv_capacity"),
]


@pytest.mark.parametrize("cal", CALS, ids=range(len(CALS)))
@pytest.mark.parametrize(("model", "gpu", "engine", "prec", "shape", "label"), CASES)
def test_throughput_saturates_at_the_binding_limit_and_names_it(
    cal: Calibration, model: str, gpu: str, engine: str, prec: str, shape: RequestShape, label: str
) -> None:
    m, d, prof, limit, kv_cap, budget_cap = _binding(model, gpu, engine, prec, shape, cal)
    cap = min(limit, kv_cap, budget_cap)
    assert (limit < kv_cap) == (label == "batch_limit")
    peak = estimate_with(m, d, shape, prof, cal)
    assert peak.max_concurrency == cap
    assert peak.bottleneck == label
    many = estimate_with(m, d, shape, prof, cal, concurrency=4 * cap)
    more = estimate_with(m, d, shape, prof, cal, concurrency=16 * cap)
    assert more.output_tokens_per_s == pytest.approx(many.output_tokens_per_s, rel=1e-9)
    assert many.output_tokens_per_s <= peak.output_tokens_per_s * (1 + 1e-9)
    assert many.bottleneck == more.bottleneck == label
    # below the cap the label is a resource: one client streams weights
    one = estimate_with(m, d, shape, prof, cal, concurrency=1)
    assert one.bottleneck == "memory_bandwidth"


@pytest.mark.parametrize(
    ("model", "gpu", "engine", "shape"),
    [
        ("llama-3.1-8b", "h100-sxm", "vllm", RequestShape(128, 128)),
        ("llama-3.1-8b", "h200-sxm", "sglang", RequestShape(128, 128)),
        ("llama-3.1-8b", "h100-sxm", "trtllm", RequestShape(128, 128)),
        ("llama-3.1-8b", "l4", "vllm", RequestShape(4000, 16)),
        ("qwen2.5-7b", "l4", "vllm", RequestShape(128, 512)),
    ],
)
def test_public_estimate_uses_the_engine_defaults_on_the_card(
    model: str, gpu: str, engine: str, shape: RequestShape
) -> None:
    """``estimate`` (no explicit profile) runs the engine with its defaults on that card: the
    cap is the smallest of them and the KV cache, and at saturation the label is that limit."""
    cal = default_calibration()
    m, d, _, limit, kv_cap, budget_cap = _binding(model, gpu, engine, "bf16", shape, cal)
    peak = estimate(m, d, shape)
    assert peak.max_concurrency == min(limit, kv_cap, budget_cap)
    by: dict[int, Bottleneck] = {
        limit: "batch_limit",
        budget_cap: "token_budget",
        kv_cap: "kv_capacity",
    }
    assert peak.bottleneck == by[peak.max_concurrency]


@pytest.mark.parametrize("gpu", ["h100-sxm", "a100-sxm-80gb", "l4"])
def test_an_estimate_states_the_vllm_limits_it_assumed_on_the_card(gpu: str) -> None:
    """The assumptions name the limits the estimate ran with on this card, not one card's."""
    g = GPUS[gpu]
    seqs, tokens = vllm_batch_defaults(g.name, memory_bytes(g))
    said = " ".join(estimate(PRESETS["llama-3.1-8b"], dep(gpu), RequestShape(512, 128)).assumptions)
    assert f"max_num_seqs {seqs}, max_num_batched_tokens {tokens} on {gpu}" in said
    other = 256 if seqs == 1024 else 1024
    assert f"max_num_seqs {other}" not in said


def test_an_sglang_estimate_states_its_memory_fraction_chunk_and_running_cap() -> None:
    m, d = PRESETS["llama-3.1-8b"], dep("h200-sxm", engine="sglang")
    fraction, chunk = sglang_memory_settings(memory_bytes(GPUS["h200-sxm"]), 1)
    running = card_profile(m, d, PUBLIC_PROFILES["sglang"], default_calibration()).max_batch
    said = " ".join(estimate(m, d, RequestShape(512, 128)).assumptions)
    assert (
        f"mem_fraction_static {fraction:.3f}, chunked_prefill_size {chunk}, "
        f"max_running_requests {running} on h200-sxm"
    ) in said
