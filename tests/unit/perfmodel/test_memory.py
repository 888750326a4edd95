"""Memory fit: weights, KV bytes per token (GQA, replication, MLA), TP and precision rules."""

from __future__ import annotations

import pytest

from service.domain.llm import PRESETS, resolve_model
from service.domain.perfmodel import Deployment, RequestShape, estimate, smallest_fitting_tp
from service.domain.perfmodel.calibration import PUBLIC_PROFILES, default_calibration
from service.domain.perfmodel.coefficients import build_setup
from service.domain.perfmodel.hardware import memory_bytes, precision_plan
from tests.unit.perfmodel.gpu_fixtures import GPUS

SHAPE = RequestShape(1000, 200)
SMALL = resolve_model({"params_b": 3}).arch


def dep(gpu: str, tp: int = 1, prec: str = "bf16", kv: str = "bf16", **kw: object) -> Deployment:
    return Deployment(GPUS[gpu], tp, prec, kv, kw.pop("engine", "vllm"), **kw)  # type: ignore[arg-type]


def setup(model: str, d: Deployment):  # type: ignore[no-untyped-def]
    return build_setup(PRESETS[model], d, PUBLIC_PROFILES[d.engine], default_calibration())


def test_llama2_70b_bf16_needs_two_80gb_cards() -> None:
    one = estimate(PRESETS["llama-2-70b"], dep("h100-sxm", 1), SHAPE)
    assert not one.fits
    assert one.reason is not None
    assert "weights need 138.0 GB per replica" in one.reason
    assert "1 x 80 GB card" in one.reason
    two = estimate(PRESETS["llama-2-70b"], dep("h100-sxm", 2), SHAPE)
    assert two.fits
    assert two.max_concurrency >= 1
    assert two.memory.weights_gb == pytest.approx(138.0 / 2, rel=0.01)


def test_smallest_fitting_tp() -> None:
    m = PRESETS["llama-2-70b"]
    assert smallest_fitting_tp(m, GPUS["h100-sxm"], "bf16", "bf16", "vllm", SHAPE) == 2
    assert smallest_fitting_tp(m, GPUS["h100-sxm"], "fp8", "fp8", "vllm", SHAPE) == 1
    assert (
        smallest_fitting_tp(PRESETS["llama-3.1-405b"], GPUS["l4"], "bf16", "bf16", "vllm", SHAPE)
        is None
    )


def test_weight_bytes_by_precision() -> None:
    m = PRESETS["llama-3.1-8b"]
    body = 8.03e9 - 2 * 128256 * 4096  # quantised linear layers; embedding + head stay 16-bit
    emb = 2 * 128256 * 4096 * 2.0
    for prec, bpw in (("bf16", 2.0), ("fp8", 1.0), ("int4", 0.5 + 2 / 128 + 0.5 / 128)):
        s = setup("llama-3.1-8b", dep("h100-sxm", 1, prec))
        assert s.weights_b == pytest.approx(body * bpw + emb, rel=0.01), prec
    assert m.params_b == pytest.approx(8.03)


def test_kv_bytes_per_token_llama3_70b_gqa() -> None:
    # 2 (K, V) x 80 layers x 8 KV heads x 128 dims x 2 bytes = 327,680 B per token
    s1 = setup("llama-3-70b", dep("h100-sxm", 1, "fp8", "bf16"))
    assert s1.kv_token_b == 2 * 80 * 8 * 128 * 2 == 327_680
    s8 = setup("llama-3-70b", dep("h100-sxm", 8))
    assert s8.kv_token_b == 327_680 / 8
    fp8 = setup("llama-3-70b", dep("h100-sxm", 8, "fp8", "fp8"))
    assert fp8.kv_token_b == 327_680 / 16


def test_gqa_kv_heads_replicate_when_tp_exceeds_kv_heads() -> None:
    # Qwen3-235B has 4 KV heads: at TP 8 each card still holds one head (replicated twice)
    s4 = setup("qwen3-235b-a22b", dep("h200-sxm", 4, "fp8", "fp8"))
    s8 = setup("qwen3-235b-a22b", dep("h200-sxm", 8, "fp8", "fp8"))
    full = 2 * 94 * 4 * 128 * 1
    assert s4.kv_token_b == full / 4
    assert s8.kv_token_b == full / 4  # not / 8
    est = estimate(PRESETS["qwen3-235b-a22b"], dep("h200-sxm", 8, "fp8", "fp8"), SHAPE)
    assert any("replicated 2x" in a for a in est.assumptions)


def test_mla_latent_kv_per_token_deepseek_v3() -> None:
    # (kv_lora_rank 512 + rope 64) x 61 layers x 2 bytes = 70,272 B, on every TP rank
    s = setup("deepseek-v3", dep("h200-sxm", 8, "fp8", "bf16"))
    assert s.kv_token_b == (512 + 64) * 61 * 2 == 70_272
    s1 = setup("deepseek-v3", dep("b200", 8, "fp8", "fp8"))
    assert s1.kv_token_b == (512 + 64) * 61


def test_tp_group_beyond_nvlink_domain_needs_pcie_permission() -> None:
    m = PRESETS["llama-3.1-70b"]
    no = estimate(m, dep("a100-pcie-80gb", 4), SHAPE)
    assert not no.fits
    assert no.reason is not None and "NVLink domain is 2" in no.reason
    ok = estimate(m, dep("a100-pcie-80gb", 4, allow_pcie_tensor_parallel=True), SHAPE)
    assert ok.fits
    assert any("PCIe" in a for a in ok.assumptions)
    pair = estimate(m, dep("a100-pcie-80gb", 2), SHAPE)
    assert pair.fits  # the NVLink bridge joins two cards


def test_pcie_only_card_rejects_tp_without_permission() -> None:
    m = PRESETS["llama-3.1-70b"]
    no = estimate(m, dep("l40s", 4, "fp8", "fp8"), SHAPE)
    assert not no.fits
    assert no.reason is not None and "no NVLink" in no.reason
    assert estimate(m, dep("l40s", 4, "fp8", "fp8", allow_pcie_tensor_parallel=True), SHAPE).fits


def test_tp_must_divide_heads_and_respect_group_limit() -> None:
    bad = estimate(PRESETS["llama-3.1-8b"], dep("h100-sxm", 3), SHAPE)
    assert not bad.fits and bad.reason is not None and "does not divide" in bad.reason
    big = estimate(PRESETS["llama-3.1-405b"], dep("h100-sxm", 16), SHAPE)
    assert not big.fits and big.reason is not None and "exceeds 8" in big.reason
    nvl72 = estimate(PRESETS["llama-3.1-405b"], dep("gb200", 16, "fp4", "fp8"), SHAPE)
    assert nvl72.fits


@pytest.mark.parametrize(
    ("gpu", "prec", "fits", "needle"),
    [
        ("a100-sxm-80gb", "fp8", True, "weight-only"),
        ("h100-sxm", "fp4", True, "weight-only"),
        ("b200", "fp4", True, ""),
        ("t4", "bf16", True, "runs as fp16"),
        ("v100-sxm2-32gb", "fp8", False, "not supported"),
        ("v100-sxm2-32gb", "int4", True, "weight-only"),
        ("quadro-p6000", "fp16", False, "compute capability 7.0 (Volta) or newer"),
        ("gaudi3", "int8", False, "not supported"),
        ("mi300x", "fp4", True, "weight-only"),
        ("l4", "fp8", True, ""),
        ("t4", "fp4", False, "not supported"),
        ("gaudi3", "fp16", True, "runs as bf16"),
    ],
)
def test_precision_support_table(gpu: str, prec: str, fits: bool, needle: str) -> None:
    kv = "fp16" if gpu in ("t4", "v100-sxm2-32gb", "quadro-p6000") else "bf16"
    est = estimate(SMALL, dep(gpu, 1, prec, kv), RequestShape(256, 64))
    assert est.fits is fits
    text = " ".join((est.reason or "", *est.assumptions))
    assert needle in text


def test_fp8_kv_needs_ampere() -> None:
    est = estimate(SMALL, dep("t4", 1, "fp16", "fp8"), RequestShape(256, 64))
    assert not est.fits and est.reason is not None and "FP8 KV" in est.reason


def test_uncalibrated_gpu_says_which_group_it_borrows() -> None:
    est = estimate(PRESETS["llama-3.1-70b"], dep("mi300x", 1, "fp8", "fp8"), SHAPE)
    assert est.fits
    assert any("hopper-hbm" in a and "0.85" in a for a in est.assumptions)
    a10g = estimate(PRESETS["llama-3.1-8b"], dep("a10g", 1, "bf16", "bf16"), RequestShape(256, 64))
    assert a10g.fits
    assert any("ada-gddr" in a for a in a10g.assumptions)
    assert any("publishes no 16-bit" in a for a in a10g.assumptions)


def test_context_window_is_enforced() -> None:
    est = estimate(PRESETS["llama-2-7b"], dep("h100-sxm"), RequestShape(4000, 500))
    assert not est.fits and est.reason is not None and "context window" in est.reason


def test_kv_pool_too_small_reason_is_numeric() -> None:
    est = estimate(PRESETS["llama-3.1-8b"], dep("l4", 1, "fp8", "bf16"), RequestShape(120000, 8000))
    assert not est.fits
    assert est.reason is not None and "tokens" in est.reason and "GB" in est.reason


def test_memory_breakdown_is_per_card_and_adds_up() -> None:
    est = estimate(PRESETS["llama-3.1-70b"], dep("h100-sxm", 4, "fp8", "fp8"), SHAPE)
    m = est.memory
    assert m.per_card and m.tensor_parallel == 4
    assert m.capacity_gb == pytest.approx(memory_bytes(GPUS["h100-sxm"]) / 1e9)
    total = m.weights_gb + m.kv_cache_gb + m.activations_gb + m.reserve_gb
    assert total == pytest.approx(m.capacity_gb, rel=1e-6)
    assert m.replica_weights_gb == pytest.approx(4 * m.weights_gb)


def test_memory_bytes_rule() -> None:
    # datasheet GB are GiB; GDDR6 data-centre cards lose 1/16 to ECC
    assert memory_bytes(GPUS["h100-sxm"]) == pytest.approx(80 * 2**30 * 0.995)
    assert memory_bytes(GPUS["l4"]) == pytest.approx(24 * 2**30 * 0.9375)
    assert memory_bytes(GPUS["rtx-pro-6000-blackwell"]) == pytest.approx(96 * 2**30 * 0.995)


def test_more_memory_more_concurrency_h100_vs_h200() -> None:
    m = PRESETS["llama-3.1-70b"]
    long = RequestShape(8000, 2000)
    a = estimate(m, dep("h100-sxm", 2, "fp8", "fp8"), long)
    b = estimate(m, dep("h200-sxm", 2, "fp8", "fp8"), long)
    assert b.max_concurrency > a.max_concurrency


def test_pascal_would_compute_16_bit_weights_on_fp32_cores() -> None:
    """The card's own rule (no engine the model knows runs on Pascal, see engine_hardware)."""
    plan = precision_plan(GPUS["quadro-p6000"], "fp16")
    assert plan.mode == "fp32" and "FP32 cores" in plan.note and plan.reason == ""
