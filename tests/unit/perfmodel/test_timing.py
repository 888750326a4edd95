"""Prefill/decode timing: roofline, a hand-computed iteration, MoE expert reads, TP all-reduce."""

from __future__ import annotations

from dataclasses import replace

import pytest

from service.domain.llm import PRESETS, param_counts
from service.domain.perfmodel import Deployment, RequestShape, estimate
from service.domain.perfmodel.calibration import (
    PUBLIC_PROFILES,
    Calibration,
    default_calibration,
)
from service.domain.perfmodel.coefficients import build_setup
from service.domain.perfmodel.iteration import iteration_parts, iteration_time
from tests.unit.perfmodel.gpu_fixtures import GPUS


def dep(gpu: str, tp: int = 1, prec: str = "bf16", kv: str = "bf16", **kw: object) -> Deployment:
    return Deployment(GPUS[gpu], tp, prec, kv, kw.pop("engine", "vllm"), **kw)  # type: ignore[arg-type]


def ideal_calibration() -> Calibration:
    """Every efficiency 1, every overhead 0: the bare roofline."""
    cal = default_calibration()
    groups = tuple((g, replace(c, eta_m=1.0, eta_c=1.0)) for g, c in cal.groups)
    engines = tuple(
        (
            e,
            replace(
                c,
                eff_compute=1.0,
                eff_memory=1.0,
                step_overhead_ms=0.0,
                layer_overhead_us=0.0,
                seq_overhead_us=0.0,
                ttft_overhead_ms=0.0,
            ),
        )
        for e, c in cal.engines
    )
    return replace(
        cal,
        groups=groups,
        engines=engines,
        fp8_gemm_eff=1.0,
        fp4_gemm_eff=1.0,
        attn_eff=1.0,
        moe_gemm_eff=1.0,
        kv_read_eff=1.0,
        ep_imbalance=1.0,
        nvlink_latency_us=0.0,
        nvlink_bw_eff=1.0,
    )


def test_hand_computed_decode_iteration_llama2_7b_a100() -> None:
    """B=8 sequences at 1024 tokens of context, one A100-SXM4-80GB, fp16, ideal efficiencies."""
    m = PRESETS["llama-2-7b"]
    prof = replace(PUBLIC_PROFILES["vllm"], derate=1.0)
    s = build_setup(m, dep("a100-sxm-80gb", 1, "fp16", "fp16"), prof, ideal_calibration())
    pc = param_counts(m)
    bw = 2039e9
    weights = (pc.body + pc.lm_head) * 2  # embedding table is gathered, not streamed
    kv = 8 * 1024 * (2 * 32 * 32 * 128 * 2)  # B x context x K/V bytes per token
    gemm = 2 * (pc.body + pc.lm_head) * 8 / 312e12
    attn = 8 * 1024 * 2 * 32 * (4096 + 4096) / 312e12
    expected = max(weights / bw, gemm) + max(kv / bw, attn)
    assert iteration_time(s, 8, 0.0, 1024, 1024) == pytest.approx(expected, rel=1e-9)
    # weights: 6.61e9 params x 2 B / 2039 GB/s = 6.48 ms; KV: 4.29 GB / 2039 GB/s = 2.11 ms
    assert expected == pytest.approx(6.48e-3 + 2.11e-3, rel=0.01)


def test_hand_computed_prefill_is_compute_bound_with_quadratic_attention() -> None:
    m = PRESETS["llama-2-7b"]
    prof = replace(PUBLIC_PROFILES["vllm"], derate=1.0)
    s = build_setup(m, dep("a100-sxm-80gb", 1, "fp16", "fp16"), prof, ideal_calibration())
    pc = param_counts(m)
    L = 4096
    gemm = (2 * pc.body * L + 2 * pc.lm_head * 1) / 312e12
    attn = 2 * 32 * L * L * 4096 / 312e12  # MODELING.md: 2 n_l L^2 d
    assert iteration_time(s, 0.0, L, 0.0, L) == pytest.approx(gemm + attn, rel=1e-9)


@pytest.mark.parametrize(
    ("model", "gpu", "tp", "prec"),
    [
        ("llama-3.1-8b", "h100-sxm", 1, "bf16"),
        ("llama-3.1-70b", "h100-sxm", 4, "fp8"),
        ("llama-3.1-70b", "a100-sxm-80gb", 2, "int4"),
        ("qwen2.5-7b", "l4", 1, "fp8"),
        ("llama-2-13b", "h200-sxm", 1, "bf16"),
    ],
)
def test_decode_tpot_never_below_weight_stream_time(
    model: str, gpu: str, tp: int, prec: str
) -> None:
    m = PRESETS[model]
    est = estimate(m, dep(gpu, tp, prec, "bf16"), RequestShape(128, 256), concurrency=1)
    assert est.fits
    pc = param_counts(m)
    streamed = est.memory.weights_gb * 1e9 - pc.embedding * 2.0 / tp
    floor_ms = streamed / (GPUS[gpu].memory_bandwidth_gbps * 1e9) * 1e3
    assert est.tpot_ms >= floor_ms
    peak = estimate(m, dep(gpu, tp, prec, "bf16"), RequestShape(128, 256))
    assert peak.tpot_ms >= floor_ms
    assert peak.output_tokens_per_s > est.output_tokens_per_s


def test_moe_expert_reads_grow_with_batch() -> None:
    m = PRESETS["mixtral-8x7b"]
    s = build_setup(m, dep("h100-sxm", 2), PUBLIC_PROFILES["vllm"], ideal_calibration())
    w_exp = s.w_exp_s
    one = iteration_parts(s, 1, 0.0, 100, 100)
    many = iteration_parts(s, 64, 0.0, 100, 100)
    # top-2 of 8: one token touches 2/8 of each layer's experts, 64 tokens nearly all
    assert one.weights_s - s.w_dense_s == pytest.approx(w_exp * 2 / 8, rel=1e-9)
    assert many.weights_s - s.w_dense_s == pytest.approx(w_exp * (1 - (6 / 8) ** 64), rel=1e-9)
    assert many.weights_s > 3.9 * (one.weights_s - s.w_dense_s) + s.w_dense_s


def test_tensor_parallel_pays_all_reduces_and_pcie_pays_more() -> None:
    m = PRESETS["llama-3.1-70b"]
    cal = default_calibration()
    prof = PUBLIC_PROFILES["vllm"]
    s1 = build_setup(m, dep("h100-sxm", 1, "fp8"), prof, cal)
    s4 = build_setup(m, dep("h100-sxm", 4, "fp8"), prof, cal)
    assert iteration_parts(s1, 32, 0.0, 1000, 1000).comm_s == 0.0
    nv = iteration_parts(s4, 32, 0.0, 1000, 1000).comm_s
    # 2 all-reduces per layer; on NVSwitch the fastest small-message one is one-shot: one step
    assert s4.n_coll == 2 * 80
    assert min(lat for lat, _ in s4.coll) == pytest.approx(cal.nvlink_latency_us * 1e-6)
    assert nv > 0.0
    pcie = build_setup(m, dep("l40s", 4, "fp8", allow_pcie_tensor_parallel=True), prof, cal)
    assert iteration_parts(pcie, 32, 0.0, 1000, 1000).comm_s > nv


def test_longer_prompt_superlinear_prefill() -> None:
    m = PRESETS["llama-3.1-8b"]
    d = dep("h100-sxm", 1, "bf16")
    short = estimate(m, d, RequestShape(2000, 100), concurrency=1)
    long = estimate(m, d, RequestShape(32000, 100), concurrency=1)
    assert long.ttft_ms > 16 * (short.ttft_ms - 60.0)  # minus fixed overheads, > linear


def test_peak_point_is_at_the_cap_and_names_a_bottleneck() -> None:
    est = estimate(
        PRESETS["llama-3.1-70b"], dep("h100-sxm", 1, "fp8", "fp8"), RequestShape(2000, 2000)
    )
    assert est.concurrency == est.max_concurrency
    assert est.bottleneck == "kv_capacity"
    pre_dep = dep("h100-sxm", 1, "fp8", "fp8", engine="trtllm")
    pre = estimate(PRESETS["llama-3.1-8b"], pre_dep, RequestShape(4000, 16))
    # prompts of 4000 tokens for 16 out: the per-iteration token budget caps the batch ...
    assert pre.bottleneck == "token_budget"
    # ... and a 4000-token prefill iteration is compute-bound (4000 FLOP per weight byte)
    s = build_setup(
        PRESETS["llama-3.1-8b"], pre_dep, PUBLIC_PROFILES["trtllm"], ideal_calibration()
    )
    prefill = iteration_parts(s, 0.0, 4000.0, 0.0, 4000.0)
    assert prefill.compute_s > 3 * prefill.memory_s
    pcie_dep = dep("l40s", 8, "fp8", "fp8", allow_pcie_tensor_parallel=True)
    one = estimate(PRESETS["llama-3.1-70b"], pcie_dep, RequestShape(128, 128), concurrency=1)
    assert one.bottleneck == "interconnect"
    # at the peak the engine's cap on running sequences (vLLM's 256 on a 48 GB card) binds
    pcie = estimate(PRESETS["llama-3.1-70b"], pcie_dep, RequestShape(128, 128))
    assert pcie.max_concurrency == 256
    assert pcie.bottleneck == "batch_limit"
