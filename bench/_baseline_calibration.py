"""The performance model as it stood before engine profiles were fitted per engine: the
baseline that bench/accuracy.py scores WITHOUT refitting.

``BASELINE_FITTED`` is ``service/domain/perfmodel/constants.py`` as generated on 2026-11-29
(TensorRT-LLM and LMDeploy rows only, a split by request shape); ``BASELINE_PROFILES`` are the
public engine profiles of that time: vLLM, SGLang and TGI were the TensorRT-LLM 1.0 constants
times a judged derating (0.9, 0.95, 0.8), with no data behind it.
"""

from __future__ import annotations

from service.domain.perfmodel.calibration import EngineProfile

BASELINE_FITTED: dict[str, object] = {
    "act_scale": 1.45565,
    "attn_eff": 0.998846,
    "closed_loop_ca2": 4.74157,
    "engines": {
        "lmdeploy-0.1": {
            "eff_compute": 1.0457,
            "eff_memory": 1.1811,
            "layer_overhead_us": 2.08342,
            "seq_overhead_us": 0.0518043,
            "step_overhead_ms": 1.79177,
            "ttft_overhead_ms": 20.8364,
        },
        "trtllm-0.14": {
            "eff_compute": 1.0,
            "eff_memory": 1.0,
            "layer_overhead_us": 29.9986,
            "seq_overhead_us": 19.6725,
            "step_overhead_ms": 4.91692,
            "ttft_overhead_ms": 5.0,
        },
        "trtllm-1.0": {
            "eff_compute": 1.08449,
            "eff_memory": 0.802716,
            "layer_overhead_us": 0.550098,
            "seq_overhead_us": 8.09895,
            "step_overhead_ms": 0.075889,
            "ttft_overhead_ms": 34.1623,
        },
    },
    "ep_imbalance": 1.5,
    "fp4_gemm_eff": 0.472694,
    "fp8_gemm_eff": 0.805019,
    "groups": {
        "ada-gddr": {
            "eta_c": 0.59204,
            "eta_m": 0.77922,
        },
        "ampere-hbm": {
            "eta_c": 0.711604,
            "eta_m": 0.691503,
        },
        "blackwell-gddr": {
            "eta_c": 0.989722,
            "eta_m": 0.921044,
        },
        "blackwell-hbm": {
            "eta_c": 0.733824,
            "eta_m": 0.503118,
        },
        "hopper-hbm": {
            "eta_c": 0.663873,
            "eta_m": 0.835042,
        },
    },
    "kv_read_eff": 0.971811,
    "moe_gemm_eff": 0.659873,
    "nvlink_bw_eff": 0.672821,
    "nvlink_latency_us": 11.6362,
    "pcie_bw_eff": 0.507301,
    "pcie_latency_us": 29.2206,
    "reserve_frac": 0.0173781,
    "reserve_gb": 2.21742,
}


BASELINE_PROFILES: dict[str, EngineProfile] = {
    "trtllm": EngineProfile(
        name="trtllm", constants="trtllm-1.0", derate=1.0, kv_fraction=0.9,
        kv_fraction_of="free", full_reservation=True, max_batch=2048, max_num_tokens=8192,
        chunked_prefill=True,
    ),
    "vllm": EngineProfile(
        name="vllm", constants="trtllm-1.0", derate=0.9, kv_fraction=0.9,
        kv_fraction_of="total", full_reservation=False, max_batch=256, max_num_tokens=8192,
        chunked_prefill=True,
    ),
    "sglang": EngineProfile(
        name="sglang", constants="trtllm-1.0", derate=0.95, kv_fraction=0.88,
        kv_fraction_of="total", full_reservation=False, max_batch=1024, max_num_tokens=8192,
        chunked_prefill=True,
    ),
    "tgi": EngineProfile(
        name="tgi", constants="trtllm-1.0", derate=0.8, kv_fraction=0.9,
        kv_fraction_of="total", full_reservation=False, max_batch=512, max_num_tokens=4096,
        chunked_prefill=True,
    ),
}  # fmt: skip
