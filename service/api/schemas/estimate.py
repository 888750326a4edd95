"""Wire types of the estimate endpoint, and its flat inputs (``ESTIMATE_FIELDS``): the
``GET /v1/estimate`` query parameters and the ``gpuplan estimate`` options are both made from
that table, with types, limits and defaults read from ``EstimateIn``."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Annotated, Any

from msgspec import Meta

from service.api.schemas.calibrations import CalibrationSpec
from service.api.schemas.common import Gigabytes, Millis, ReqPerS, WireIn, WireOut
from service.api.schemas.flat import FlatField, body_from_data, body_from_flat
from service.api.schemas.models import ModelIn
from service.api.schemas.plan_request import (
    MIN_QPS,
    EngineVersion,
    GpuName,
    Tokens,
    WeightPrecision,
)
from service.domain.vocabulary import Bottleneck, Engine, KvPrecision, Precision
from service.usecases.estimating import EstimateAnswer, EstimateQuery


class EstimateIn(WireIn, kw_only=True):
    """One model on one GPU configuration. Without ``concurrency`` the answer is the
    peak-throughput operating point (running batch at the memory or engine cap); with ``qps``
    it adds latency percentiles under that Poisson arrival rate."""

    model: ModelIn
    gpu: GpuName
    tensor_parallel: (
        Annotated[
            int, Meta(ge=1, le=72, description="Cards per replica (default: smallest that fits).")
        ]
        | None
    ) = None
    precision: WeightPrecision | None = None
    kv_cache_precision: KvPrecision = "bf16"
    engine: Engine = "vllm"
    engine_version: EngineVersion | None = None
    prompt_tokens: Tokens
    output_tokens: Tokens
    concurrency: (
        Annotated[int, Meta(ge=1, le=100_000, description="Fixed running batch.")] | None
    ) = None
    qps: (
        Annotated[
            float,
            Meta(ge=MIN_QPS, le=1_000_000, description="Arrival rate at the replica, req/s."),
        ]
        | None
    ) = None
    allow_pcie_tensor_parallel: Annotated[
        bool,
        Meta(
            description="Let a replica span more cards than the NVLink domain, all-reducing "
            "over PCIe (default true, as in plans; false keeps groups within NVLink)."
        ),
    ] = True
    calibration: CalibrationSpec | None = None

    def to_query(self) -> EstimateQuery:
        return EstimateQuery(
            model=self.model if isinstance(self.model, str) else self.model.to_mapping(),
            gpu=self.gpu,
            tensor_parallel=self.tensor_parallel,
            precision=self.precision,
            kv_precision=self.kv_cache_precision,
            engine=self.engine,
            engine_version=self.engine_version,
            prompt_tokens=self.prompt_tokens,
            output_tokens=self.output_tokens,
            concurrency=self.concurrency,
            qps=self.qps,
            allow_pcie_tensor_parallel=self.allow_pcie_tensor_parallel,
            calibration=self.calibration,
        )


ESTIMATE_FIELDS: tuple[FlatField, ...] = (
    FlatField("model", "model", "Preset id or alias.", required=True),
    FlatField("gpu", "gpu", "GPU id or alias.", required=True),
    FlatField("prompt_tokens", "prompt_tokens", required=True),
    FlatField("output_tokens", "output_tokens", required=True),
    FlatField(
        "tensor_parallel",
        "tensor_parallel",
        "Cards per replica (default: smallest that fits).",
        cli_aliases=("tp",),
    ),
    FlatField("precision", "precision", "Weight format (default: the checkpoint's format)."),
    FlatField("kv_cache_precision", "kv_cache_precision"),
    FlatField("engine", "engine"),
    FlatField("engine_version", "engine_version", "Engine release, e.g. 0.6 (default: newest)."),
    FlatField("concurrency", "concurrency", "Fixed running batch."),
    FlatField("qps", "qps", "Arrival rate at the replica, req/s (adds latency percentiles)."),
    FlatField("allow_pcie_tensor_parallel", "allow_pcie_tensor_parallel"),
    FlatField("calibration", "calibration", "Calibration profile: name, name@vN or reference."),
)


def estimate_from_flat(values: Mapping[str, Any]) -> EstimateIn:
    """Flat ``values`` (query parameters or CLI options, by field name) as a request body;
    ``InvalidInput`` naming the field at fault."""
    return body_from_data(EstimateIn, body_from_flat(ESTIMATE_FIELDS, values))


class MemoryOut(WireOut, kw_only=True):
    """GB (10^9 bytes) on ONE card of the replica."""

    weights_gb: Gigabytes
    kv_cache_gb: float
    activations_gb: Gigabytes
    reserve_gb: float
    capacity_gb: Gigabytes
    per_card: bool


class PercentilesOut(WireOut, kw_only=True):
    p50: Millis | None
    p90: float | None
    p95: Millis | None
    p99: float | None


class LatencyOut(WireOut, kw_only=True):
    """Latency percentiles (ms) under Poisson arrivals at ``qps``."""

    ttft_ms: PercentilesOut
    tpot_ms: PercentilesOut
    e2e_ms: PercentilesOut


class EstimateOut(WireOut, kw_only=True):
    fits: bool
    reason: str | None
    gpu: str
    tensor_parallel: int
    precision: Annotated[
        Precision,
        Meta(description="Weight format planned: as asked, else the model's checkpoint format."),
    ]
    max_concurrency: int
    concurrency: int
    ttft_ms: Millis | None
    tpot_ms: float | None
    e2e_ms: Millis | None
    output_tokens_per_s: Annotated[
        float, Meta(description="Output tokens per second, whole replica.")
    ]
    requests_per_s: ReqPerS
    bottleneck: Bottleneck
    memory: MemoryOut
    latency: LatencyOut | None
    assumptions: list[str]
    catalog_revision: int

    @classmethod
    def from_domain(cls, answer: EstimateAnswer) -> EstimateOut:
        e = answer.estimate
        m = e.memory
        lat = e.latency
        return cls(
            fits=e.fits,
            reason=e.reason,
            gpu=e.gpu,
            tensor_parallel=e.tensor_parallel,
            precision=answer.precision,
            max_concurrency=e.max_concurrency,
            concurrency=e.concurrency,
            ttft_ms=_ms(e.ttft_ms),
            tpot_ms=_ms(e.tpot_ms),
            e2e_ms=_ms(e.e2e_ms),
            output_tokens_per_s=round(e.output_tokens_per_s, 2),
            requests_per_s=round(e.requests_per_s, 4),
            bottleneck=e.bottleneck,
            memory=MemoryOut(
                weights_gb=round(m.weights_gb, 3),
                kv_cache_gb=round(m.kv_cache_gb, 3),
                activations_gb=round(m.activations_gb, 3),
                reserve_gb=round(m.reserve_gb, 3),
                capacity_gb=round(m.capacity_gb, 3),
                per_card=m.per_card,
            ),
            latency=(
                LatencyOut(
                    ttft_ms=PercentilesOut(
                        p50=_ms(lat.ttft_p50_ms),
                        p90=_ms(lat.ttft_p90_ms),
                        p95=_ms(lat.ttft_p95_ms),
                        p99=_ms(lat.ttft_p99_ms),
                    ),
                    tpot_ms=PercentilesOut(
                        p50=_ms(lat.tpot_p50_ms),
                        p90=_ms(lat.tpot_p90_ms),
                        p95=_ms(lat.tpot_p95_ms),
                        p99=_ms(lat.tpot_p99_ms),
                    ),
                    e2e_ms=PercentilesOut(
                        p50=_ms(lat.e2e_p50_ms),
                        p90=_ms(lat.e2e_p90_ms),
                        p95=_ms(lat.e2e_p95_ms),
                        p99=_ms(lat.e2e_p99_ms),
                    ),
                )
                if lat is not None
                else None
            ),
            assumptions=list(answer.assumptions),
            catalog_revision=answer.revision,
        )


def _ms(value: float) -> float | None:
    """Milliseconds rounded for reading; ``None`` where the load is beyond what the replica can
    sustain (the model's latency is unbounded there)."""
    return round(value, 3) if math.isfinite(value) else None
