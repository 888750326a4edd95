"""The latency floor: the lowest TTFT, TPOT and E2E a replica reaches at a load that still
counts (one request in flight), below what it shows under more load, and the smallest latency
limit a fleet of it can be sized against."""

from __future__ import annotations

import math

import pytest

from service.domain.llm import PRESETS
from service.domain.perfmodel import Deployment, RequestShape, Slo, estimate, max_qps_under_slo
from service.domain.perfmodel.capacity import latency_floor
from tests.unit.perfmodel.gpu_fixtures import GPUS

M = PRESETS["llama-3.1-8b"]
SHAPES = (RequestShape(1000, 250), RequestShape(4000, 100), RequestShape(200, 800))
DEPLOYMENTS = (
    Deployment(GPUS["h100-sxm"], 1, "fp8", "fp8", "vllm"),
    Deployment(GPUS["l40s"], 2, "bf16", "bf16", "vllm", allow_pcie_tensor_parallel=True),
    Deployment(GPUS["a100-sxm-80gb"], 4, "bf16", "bf16", "vllm"),
)


def up(ms: float) -> float:
    return math.ceil(ms * 10) / 10


@pytest.mark.parametrize("dep", DEPLOYMENTS, ids=lambda d: f"{d.gpu.id}-tp{d.tensor_parallel}")
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("percentile", [50.0, 95.0, 99.0])
def test_a_limit_at_the_floor_leaves_about_the_floors_load(
    dep: Deployment, shape: RequestShape, percentile: float
) -> None:
    floor = latency_floor(M, dep, shape, percentile)
    assert floor.limited_by == "floor" and floor.qps > 0
    assert floor.concurrency == pytest.approx(1.0)
    assert floor.ttft_ms > 0 and 0 < floor.tpot_ms < floor.e2e_ms
    slo = Slo(up(floor.ttft_ms), up(floor.tpot_ms), up(floor.e2e_ms), percentile)
    cap = max_qps_under_slo(M, dep, shape, slo)
    assert cap.qps >= floor.qps * 0.99
    # Tighter than the floor on TPOT, the same deployment carries less (or nothing).
    tighter = Slo(None, floor.tpot_ms * 0.9, None, percentile)
    assert max_qps_under_slo(M, dep, shape, tighter).qps < floor.qps


@pytest.mark.parametrize("dep", DEPLOYMENTS, ids=lambda d: f"{d.gpu.id}-tp{d.tensor_parallel}")
def test_the_floor_is_below_the_latencies_under_more_load(dep: Deployment) -> None:
    shape = SHAPES[0]
    floor = latency_floor(M, dep, shape, 95.0)
    loaded = estimate(M, dep, shape, qps=floor.qps * 4).latency
    assert loaded is not None
    assert floor.ttft_ms <= loaded.ttft_p95_ms and floor.tpot_ms <= loaded.tpot_p95_ms


def test_a_model_that_does_not_fit_has_no_floor() -> None:
    dep = Deployment(GPUS["l40s"], 1, "bf16", "bf16", "vllm")
    floor = latency_floor(PRESETS["llama-3.1-70b"], dep, SHAPES[0], 95.0)
    assert floor.limited_by == "does_not_fit" and floor.qps == 0 and floor.reason
