"""Calibrated constants: their structure, and the engine profiles that use them.

The numbers live in :mod:`service.domain.perfmodel.constants`, a Python module written by
``bench/calibrate.py`` (least squares on log ratios against ``service/data/calibration.csv``;
its docstring records the command, date and fit error). This module only gives them shape.

Constant groups (what physically differs, see ``hardware`` for the GPU groups):

* per GPU group: ``eta_m`` achieved fraction of datasheet memory bandwidth; ``eta_c`` achieved
  fraction of datasheet dense 16-bit tensor throughput in GEMMs;
* per format (global): ``fp8_gemm_eff``/``fp4_gemm_eff`` achieved fraction of the 8-bit / 4-bit
  peak relative to ``eta_c`` (low-precision GEMMs reach a smaller share of their doubled peak);
  ``attn_eff`` prefill-attention (FMHA) efficiency relative to ``eta_c``; ``moe_gemm_eff`` for
  grouped expert GEMMs; ``kv_read_eff`` the share of the achieved bandwidth that decode
  attention reaches when streaming the (paged) KV cache; ``ep_imbalance`` (>= 1) the slowest
  rank's share of routed-expert work over the mean when experts are sharded by expert
  (expert parallelism: routing is never perfectly balanced);
* per engine build: ``eff_compute``/``eff_memory`` multipliers, fixed per-iteration cost
  ``step_overhead_ms`` + ``layer_overhead_us`` x layers (launch latency, synchronisation and
  kernel tails that short kernels cannot hide), host-side ``seq_overhead_us`` x running
  sequences (scheduling, sampling, bookkeeping) overlapped with GPU work so an iteration takes
  the longer of the two, and ``ttft_overhead_ms`` (request handling before the first
  iteration);
* load: ``closed_loop_ca2``, the squared coefficient of variation of arrivals from a closed loop
  of clients sending identical requests (they drift in step, so arrivals are burstier than
  Poisson's 1); it scales the prompt-queue wait (Kingman's G/D/1 approximation);
* interconnect: per-hop latency of a ring all-reduce step and achieved bandwidth fraction, for
  NVLink-class links and for PCIe;
* memory: ``reserve_gb`` per card for the CUDA context, library workspaces and communication
  buffers, plus ``reserve_frac`` of the card's memory (allocator fragmentation and caching);
  ``act_scale`` multiplies the activation/workspace estimate of ``core`` (buffers sized by the
  per-iteration token budget).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache

from service.domain.perfmodel import constants as _constants
from service.domain.perfmodel.values import Engine


@dataclass(frozen=True, slots=True)
class GroupConstants:
    """Achieved fractions of datasheet peaks for one GPU group."""

    eta_m: float
    eta_c: float


@dataclass(frozen=True, slots=True)
class EngineConstants:
    """Fitted behaviour of one engine build (see module docstring)."""

    eff_compute: float
    eff_memory: float
    step_overhead_ms: float
    layer_overhead_us: float
    seq_overhead_us: float
    ttft_overhead_ms: float


@dataclass(frozen=True, slots=True)
class Calibration:
    """All fitted constants. Hashable, so derived quantities can be memoised per calibration."""

    groups: tuple[tuple[str, GroupConstants], ...]
    engines: tuple[tuple[str, EngineConstants], ...]
    fp8_gemm_eff: float
    fp4_gemm_eff: float
    attn_eff: float
    moe_gemm_eff: float
    kv_read_eff: float
    ep_imbalance: float
    closed_loop_ca2: float
    act_scale: float
    nvlink_latency_us: float
    nvlink_bw_eff: float
    pcie_latency_us: float
    pcie_bw_eff: float
    reserve_gb: float
    reserve_frac: float
    group_by_name: dict[str, GroupConstants] = field(
        init=False, repr=False, compare=False, hash=False
    )
    engine_by_name: dict[str, EngineConstants] = field(
        init=False, repr=False, compare=False, hash=False
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "group_by_name", dict(self.groups))
        object.__setattr__(self, "engine_by_name", dict(self.engines))

    def gemm_eff(self, fp_kind: str) -> float:
        """Low-precision GEMM efficiency relative to ``eta_c`` for ``fp_kind`` "16"/"8"/"4"/"32"."""
        if fp_kind == "8":
            return self.fp8_gemm_eff
        if fp_kind == "4":
            return self.fp4_gemm_eff
        return 1.0


def calibration_from_mapping(data: Mapping[str, object]) -> Calibration:
    """Build a :class:`Calibration` from the plain-literal form stored in ``constants.py``."""
    groups_raw = data["groups"]
    engines_raw = data["engines"]
    if not isinstance(groups_raw, Mapping) or not isinstance(engines_raw, Mapping):
        raise TypeError("constants: 'groups' and 'engines' must be mappings")
    groups = tuple(
        (str(k), GroupConstants(float(v["eta_m"]), float(v["eta_c"])))
        for k, v in sorted(groups_raw.items())
    )
    engines = tuple(
        (
            str(k),
            EngineConstants(
                eff_compute=float(v["eff_compute"]),
                eff_memory=float(v["eff_memory"]),
                step_overhead_ms=float(v["step_overhead_ms"]),
                layer_overhead_us=float(v["layer_overhead_us"]),
                seq_overhead_us=float(v["seq_overhead_us"]),
                ttft_overhead_ms=float(v["ttft_overhead_ms"]),
            ),
        )
        for k, v in sorted(engines_raw.items())
    )

    def f(key: str) -> float:
        value = data[key]
        if not isinstance(value, int | float):
            raise TypeError(f"constants: {key!r} must be a number")
        return float(value)

    return Calibration(
        groups=groups,
        engines=engines,
        fp8_gemm_eff=f("fp8_gemm_eff"),
        fp4_gemm_eff=f("fp4_gemm_eff"),
        attn_eff=f("attn_eff"),
        moe_gemm_eff=f("moe_gemm_eff"),
        kv_read_eff=f("kv_read_eff"),
        ep_imbalance=f("ep_imbalance"),
        closed_loop_ca2=f("closed_loop_ca2"),
        act_scale=f("act_scale"),
        nvlink_latency_us=f("nvlink_latency_us"),
        nvlink_bw_eff=f("nvlink_bw_eff"),
        pcie_latency_us=f("pcie_latency_us"),
        pcie_bw_eff=f("pcie_bw_eff"),
        reserve_gb=f("reserve_gb"),
        reserve_frac=f("reserve_frac"),
    )


@lru_cache(maxsize=1)
def default_calibration() -> Calibration:
    """The committed fit (``constants.FITTED``)."""
    return calibration_from_mapping(_constants.FITTED)


@dataclass(frozen=True, slots=True)
class EngineProfile:
    """How an engine schedules and allocates, plus which fitted constants it uses.

    * ``constants``: key into ``Calibration.engines``; ``derate`` multiplies its efficiencies
      (1.0 for a calibrated build).
    * ``kv_fraction`` of ``"total"`` memory (vLLM ``gpu_memory_utilization``, SGLang
      ``mem_fraction_static``) or of the ``"free"`` memory left after weights and activations
      (TensorRT-LLM ``free_gpu_memory_fraction``).
    * ``full_reservation``: the scheduler reserves ``prompt + output`` tokens per sequence
      (TensorRT-LLM ``GUARANTEED_NO_EVICT``); otherwise paged admission holds on average
      ``prompt + output/2`` tokens per sequence.
    * ``max_batch``: cap on running sequences; ``max_num_tokens``: per-iteration token budget
      (0 = sized to the batch as ``trtllm-bench`` does, capped at ``auto_token_cap``);
      ``chunked_prefill``: long prompts split to fit the budget.
    * ``attention_dp_moe``: MoE models run attention data-parallel (each rank its own sequences,
      attention weights replicated, no KV-head replication) with experts sharded.
    """

    name: str
    constants: str
    derate: float
    kv_fraction: float
    kv_fraction_of: str
    full_reservation: bool
    max_batch: int
    max_num_tokens: int
    chunked_prefill: bool
    attention_dp_moe: bool = False
    auto_token_cap: int = 32768
    note: str = ""


# Public engines. vLLM, SGLang and TGI have no rows in calibration.csv: they share the
# TensorRT-LLM 1.0 (PyTorch backend) constants with a stated derating. The derating is a
# judgement informed by BentoML's June 2024 comparison (bentoml.com/blog/benchmarking-llm-
# inference-backends: on A100 80GB vLLM's token generation rate trailed LMDeploy/TensorRT-LLM;
# TGI trailed further) and SGLang's own reports of parity with TensorRT-LLM; it is not fitted.
PUBLIC_PROFILES: dict[Engine, EngineProfile] = {
    "trtllm": EngineProfile(
        name="trtllm", constants="trtllm-1.0", derate=1.0, kv_fraction=0.9,
        kv_fraction_of="free", full_reservation=True, max_batch=2048, max_num_tokens=8192,
        chunked_prefill=True,
        note="TensorRT-LLM (LLM API defaults: KV 0.9 of free memory, GUARANTEED_NO_EVICT, "
        "max_batch_size 2048, max_num_tokens 8192); constants fitted on v1.0 PyTorch backend",
    ),
    "vllm": EngineProfile(
        name="vllm", constants="trtllm-1.0", derate=0.9, kv_fraction=0.9,
        kv_fraction_of="total", full_reservation=False, max_batch=256, max_num_tokens=8192,
        chunked_prefill=True,
        note="vLLM (gpu_memory_utilization 0.9, max_num_seqs 256, chunked prefill 8192 tokens); "
        "no calibration data: TensorRT-LLM 1.0 constants x 0.9 (judgement)",
    ),
    "sglang": EngineProfile(
        name="sglang", constants="trtllm-1.0", derate=0.95, kv_fraction=0.88,
        kv_fraction_of="total", full_reservation=False, max_batch=1024, max_num_tokens=8192,
        chunked_prefill=True,
        note="SGLang (mem_fraction_static 0.88, chunked prefill 8192 tokens); no calibration "
        "data: TensorRT-LLM 1.0 constants x 0.95 (judgement)",
    ),
    "tgi": EngineProfile(
        name="tgi", constants="trtllm-1.0", derate=0.8, kv_fraction=0.9,
        kv_fraction_of="total", full_reservation=False, max_batch=512, max_num_tokens=4096,
        chunked_prefill=True,
        note="TGI (max_batch_prefill_tokens 4096, KV from remaining memory); no calibration "
        "data: TensorRT-LLM 1.0 constants x 0.8 (judgement)",
    ),
}  # fmt: skip

# Profiles of the measured benchmarks (used by bench/calibrate.py; not offered to callers).
BENCH_PROFILES: dict[str, EngineProfile] = {
    # trtllm-bench throughput, TensorRT backend (v0.14): engine built by the trtllm-bench
    # heuristic (max batch from KV memory, <= 4096; token budget batch x (1 + ISL/OSL));
    # GUARANTEED_NO_EVICT; KV 0.95 of free memory ("--kv_cache_free_gpu_mem_fraction 0.95").
    "trtllm-0.14": EngineProfile(
        name="trtllm-0.14", constants="trtllm-0.14", derate=1.0, kv_fraction=0.95,
        kv_fraction_of="free", full_reservation=True, max_batch=4096, max_num_tokens=0,
        chunked_prefill=False,
    ),
    # trtllm-bench throughput, PyTorch backend (v1.0); MoE runs use attention DP + EP
    # (perf-overview.md llm_options for MoE models).
    "trtllm-1.0": EngineProfile(
        name="trtllm-1.0", constants="trtllm-1.0", derate=1.0, kv_fraction=0.95,
        kv_fraction_of="free", full_reservation=True, max_batch=4096, max_num_tokens=0,
        chunked_prefill=False, attention_dp_moe=True,
    ),
    # LMDeploy v0.1.0a1 TurboMind: paged blocks, whole-prompt prefill, KV pool sized so the
    # process holds ~95 % of the card (the source's mem(GB) column: 74-78 of 80 GB).
    "lmdeploy-0.1": EngineProfile(
        name="lmdeploy-0.1", constants="lmdeploy-0.1", derate=1.0, kv_fraction=0.95,
        kv_fraction_of="total", full_reservation=False, max_batch=4096, max_num_tokens=10**9,
        chunked_prefill=False,
    ),
    # NIM 1.8 (TensorRT-LLM engine behind an OpenAI server): serving defaults of TensorRT-LLM,
    # constants of the TensorRT-LLM 1.0 fit.
    "nim-1.8": EngineProfile(
        name="nim-1.8", constants="trtllm-1.0", derate=1.0, kv_fraction=0.9,
        kv_fraction_of="free", full_reservation=True, max_batch=2048, max_num_tokens=8192,
        chunked_prefill=False,
    ),
}  # fmt: skip
