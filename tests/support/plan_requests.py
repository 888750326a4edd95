"""A domain ``PlanRequest`` for planner tests: one shape on a preset model, vLLM, with only
what a test is about given."""

from __future__ import annotations

from typing import Any

from service.domain.catalog import CatalogSnapshot
from service.domain.llm import resolve_model
from service.domain.perfmodel import Slo
from service.domain.planner import (
    PlanConstraints,
    PlanPolicy,
    PlanRequest,
    SolvedPlan,
    WorkloadBucket,
    plan,
    plan_id,
)

ONE_SHAPE = (WorkloadBucket("b0", 1.0, 512, 128),)
LOOSE_SLO = Slo(ttft_ms=2000, tpot_ms=80, e2e_ms=None, percentile=95)


def plan_request(
    *,
    model: str = "llama-3.1-8b",
    qps: float = 5.0,
    buckets: tuple[WorkloadBucket, ...] = ONE_SHAPE,
    slo: Slo = LOOSE_SLO,
    precision: str = "bf16",
    kv_precision: str = "bf16",
    budget: float | None = None,
    policy: PlanPolicy | None = None,
    **constraints: Any,
) -> PlanRequest:
    return PlanRequest(
        model=resolve_model(model),
        precision=precision,  # type: ignore[arg-type]
        kv_precision=kv_precision,  # type: ignore[arg-type]
        engine="vllm",
        qps=qps,
        buckets=buckets,
        slo=slo,
        budget_usd_per_hour=budget,
        constraints=PlanConstraints(**constraints),
        policy=policy or PlanPolicy(),
    )


def solved_plan(request: PlanRequest, snapshot: CatalogSnapshot) -> SolvedPlan:
    """``request`` planned on ``snapshot``, with its id, as the service stores it."""
    return SolvedPlan(
        plan_id(request, snapshot.revision), snapshot.revision, request, plan(request, snapshot)
    )
