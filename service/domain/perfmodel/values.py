"""Value types of the performance model (inputs and answers). Units are in the names.

``ms`` milliseconds, ``gb`` 10^9 bytes, ``qps``/``requests_per_s`` requests per second per
replica, ``tokens_per_s`` output tokens per second per replica. A *replica* is one model instance
over ``tensor_parallel`` cards.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from service.domain.catalog import GpuSpec
from service.domain.hashing import field_hash
from service.domain.vocabulary import (
    ENGINES,
    KV_PRECISIONS,
    PRECISIONS,
    Bottleneck,
    Engine,
    KvPrecision,
    Precision,
)

__all__ = [
    "ENGINES",
    "KV_PRECISIONS",
    "PRECISIONS",
    "Bottleneck",
    "Capacity",
    "Deployment",
    "Engine",
    "Estimate",
    "KvPrecision",
    "LatencyPercentiles",
    "MemoryBreakdown",
    "Precision",
    "RequestShape",
    "Slo",
]


@dataclass(frozen=True, slots=True)
class Correction:
    """A team's multipliers on the reference constants for one (engine, GPU family), fitted on
    its own benchmark files (``perfmodel/correction.py`` applies them; 1.0 = the reference):
    ``compute`` on the family's achieved GEMM fraction, ``memory`` on its achieved bandwidth
    fraction, ``overhead`` on the engine build's fixed per-iteration costs. ``label`` names the
    calibration profile and version (``"team-a v3"``)."""

    label: str
    engine: str
    family: str
    compute: float = 1.0
    memory: float = 1.0
    overhead: float = 1.0

    def scaled(self, compute: float, memory: float, overhead: float) -> Correction:
        return replace(self, compute=compute, memory=memory, overhead=overhead)


@dataclass(frozen=True, slots=True)
class Deployment:
    """One replica: ``tensor_parallel`` cards of ``gpu`` running ``engine``.

    ``precision`` is the weight format (and the GEMM compute format where the card supports it
    natively, see ``hardware.PRECISION_RULES``); ``kv_precision`` the KV-cache element format.
    ``allow_pcie_tensor_parallel`` permits a tensor-parallel group larger than the card's
    NVLink domain, with all-reduces over PCIe. ``engine_version`` selects a registered build of
    the engine (``"0.11"``); ``None`` means its newest calibrated build. ``correction``: a
    calibration profile's multipliers for this card's family and engine (``None``: the
    reference constants).
    """

    gpu: GpuSpec
    tensor_parallel: int
    precision: Precision
    kv_precision: KvPrecision
    engine: Engine
    allow_pcie_tensor_parallel: bool = False
    engine_version: str | None = None
    correction: Correction | None = None
    _hash: int = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", field_hash(self))

    def __hash__(self) -> int:  # memoised: the performance model's caches key on it
        return self._hash


@dataclass(frozen=True, slots=True)
class RequestShape:
    """Tokens in the prompt and tokens generated, per request (both >= 1)."""

    prompt_tokens: int
    output_tokens: int


@dataclass(frozen=True, slots=True)
class Slo:
    """Latency limits at ``percentile`` (50..99.9); ``None`` means no limit on that metric.

    ``ttft_ms`` time to first token, ``tpot_ms`` mean time per output token of a request after
    the first, ``e2e_ms`` whole-request latency.
    """

    ttft_ms: float | None
    tpot_ms: float | None
    e2e_ms: float | None
    percentile: float


@dataclass(frozen=True, slots=True)
class MemoryBreakdown:
    """Memory of ONE card of the replica, in GB (10^9 bytes); ``per_card`` is always True.

    ``weights_gb`` this card's weight shard; ``kv_cache_gb`` the KV-cache pool the engine
    allocates on it; ``activations_gb`` activation/workspace buffers; ``reserve_gb`` CUDA
    context, library workspaces and communication buffers plus the share the engine leaves
    unallocated; ``capacity_gb`` the card's memory. Multiply by ``tensor_parallel`` for the
    replica (``replica_*`` properties).
    """

    weights_gb: float
    kv_cache_gb: float
    activations_gb: float
    reserve_gb: float
    capacity_gb: float
    tensor_parallel: int = 1
    per_card: bool = True

    @property
    def replica_weights_gb(self) -> float:
        """Weights summed over the replica's cards (replicated tensors counted per card)."""
        return self.weights_gb * self.tensor_parallel

    @property
    def replica_kv_cache_gb(self) -> float:
        """KV pool summed over the replica's cards."""
        return self.kv_cache_gb * self.tensor_parallel

    @property
    def replica_capacity_gb(self) -> float:
        """Memory of all the replica's cards."""
        return self.capacity_gb * self.tensor_parallel


@dataclass(frozen=True, slots=True)
class LatencyPercentiles:
    """Latency percentiles (ms) under Poisson arrivals at the estimate's ``qps``."""

    ttft_p50_ms: float
    ttft_p90_ms: float
    ttft_p95_ms: float
    ttft_p99_ms: float
    tpot_p50_ms: float
    tpot_p90_ms: float
    tpot_p95_ms: float
    tpot_p99_ms: float
    e2e_p50_ms: float
    e2e_p90_ms: float
    e2e_p95_ms: float
    e2e_p99_ms: float


@dataclass(frozen=True, slots=True)
class Estimate:
    """Performance of one replica at one operating point.

    ``ttft_ms``, ``tpot_ms``, ``e2e_ms`` are means. ``concurrency`` is the running batch
    (sequences decoding together); ``max_concurrency`` the most the memory and the engine allow.
    ``output_tokens_per_s``/``requests_per_s`` are for the whole replica. When ``fits`` is False
    the timing fields are 0 and ``reason`` says why with numbers. When the requested ``qps``
    exceeds what the replica sustains, ``reason`` says so and the latencies are ``inf``.
    """

    fits: bool
    reason: str | None
    gpu: str
    tensor_parallel: int
    max_concurrency: int
    concurrency: int
    ttft_ms: float
    tpot_ms: float
    e2e_ms: float
    output_tokens_per_s: float
    requests_per_s: float
    bottleneck: Bottleneck
    memory: MemoryBreakdown
    latency: LatencyPercentiles | None
    assumptions: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Capacity:
    """Largest Poisson arrival rate one replica sustains within an SLO, and its latencies there.

    ``qps`` requests per second; latencies (ms) are at the SLO's percentile; ``concurrency`` the
    running batch at that rate. ``limited_by`` names the binding limit (``"ttft"``, ``"tpot"``,
    ``"e2e"``, ``"kv_capacity"``, ``"does_not_fit"``...); ``reason`` explains a zero capacity.
    """

    qps: float
    ttft_ms: float
    tpot_ms: float
    e2e_ms: float
    concurrency: float
    limited_by: str
    reason: str | None = None
