"""Every fleet line says what kind of seller its provider is and when its price was observed;
the plan names the oldest price it relies on (text, JSON and flat renderings)."""

from __future__ import annotations

from functools import cache

import pytest

from service.api.render import plan_flat, plan_text
from service.api.schemas.plan_response import PlanOut
from service.domain.catalog import CatalogSnapshot
from service.domain.llm import resolve_model
from service.domain.perfmodel import Slo
from service.domain.planner import PlanConstraints, PlanRequest, WorkloadBucket
from service.domain.planner.identity import SolvedPlan
from service.domain.providers import provider_kind
from service.usecases.seed_catalog import seed_snapshot
from tests.support.plan_requests import solved_plan


@pytest.mark.parametrize(
    ("provider", "instance", "kind"),
    [
        ("aws", "p5.48xlarge", "hyperscaler"),
        ("gcp", "a3-highgpu-8g", "hyperscaler"),
        ("azure", "Standard_ND96isr_H100_v5", "hyperscaler"),
        ("lambda", "gpu_1x_gh200", "gpu_cloud"),
        ("runpod", "1x_H100_SECURE", "gpu_cloud"),
        ("runpod", "1x_RTXA6000_COMMUNITY", "marketplace"),
        ("vast", "1x-H200-32-65536", "marketplace"),
        ("street", "card", "purchase"),
        ("examplecloud", "ex.8x", "other"),
    ],
)
def test_provider_kinds(provider: str, instance: str, kind: str) -> None:
    assert provider_kind(provider, instance) == kind


@cache
def snapshot() -> CatalogSnapshot:
    return seed_snapshot()


def solved(**constraints: object) -> SolvedPlan:
    request = PlanRequest(
        model=resolve_model("llama-3.1-70b"),
        precision="fp8",
        kv_precision="fp8",
        engine="vllm",
        qps=30.0,
        buckets=(WorkloadBucket("b0", 0.7, 1024, 256), WorkloadBucket("b1", 0.3, 4000, 300)),
        slo=Slo(ttft_ms=1500, tpot_ms=60, e2e_ms=None, percentile=95),
        constraints=PlanConstraints(**constraints),  # type: ignore[arg-type]
    )
    return solved_plan(request, snapshot())


@pytest.mark.parametrize("providers", [None, ("aws", "gcp", "azure"), ("vast", "runpod")])
def test_each_fleet_line_carries_its_price_date_and_provider_kind(
    providers: tuple[str, ...] | None,
) -> None:
    result = solved(providers=providers)
    fleet = result.plan.fleet
    assert fleet is not None and fleet.lines
    current = {
        (p.gpu_id, p.provider, p.region, p.instance_type): p.observed_at
        for p in snapshot().prices
        if p.kind == "on_demand"
    }
    for line in fleet.lines:
        key = (line.gpu, line.provider, line.region, line.instance_type)
        assert line.price_observed_at == current[key]
        assert line.provider_kind == provider_kind(line.provider, line.instance_type)
    oldest = min(line.price_observed_at for line in fleet.lines if line.price_observed_at)
    assert fleet.oldest_price_observed_at == oldest
    out = PlanOut.from_domain(result)
    assert out.oldest_price_observed_at == oldest
    text = plan_text(out)
    assert f"oldest price used: {oldest.date().isoformat()}" in text
    header = next(row for row in text.splitlines() if row.startswith("GPU "))
    assert "KIND" in header and "OBSERVED" in header
    for shown in out.fleet:
        row = next(
            r for r in text.splitlines() if shown.instance_type in r and r.startswith(shown.gpu)
        )
        assert shown.provider_kind in row
        assert shown.price_observed_at is not None
        assert shown.price_observed_at.date().isoformat() in row
    flat = plan_flat(out)
    assert flat["provider_kind_0"] == out.fleet[0].provider_kind
    assert flat["price_observed_at_0"].startswith(str(out.fleet[0].price_observed_at)[:10])
    assert flat["oldest_price_observed_at"].startswith(oldest.date().isoformat())
