"""Planner: fleet request + catalog snapshot -> cheapest GPU fleet with explanations.

Public API::

    canonical_request(draft: PlanDraft, snapshot: CatalogSnapshot) -> PlanRequest
    plan_id(request: PlanRequest, revision: int) -> str
    plan(request: PlanRequest, snapshot: CatalogSnapshot) -> Plan
"""

from service.domain.planner.canonical import (
    MIN_SHAPE_QPS,
    canonical_request,
    normalize_provider,
    resolve_requested_model,
)
from service.domain.planner.draft import (
    BudgetDraft,
    ConstraintsDraft,
    MixingDraft,
    MixShare,
    PlanDraft,
    WorkloadDraft,
)
from service.domain.planner.identity import (
    PLAN_ID_VERSION,
    SolvedPlan,
    canonical_bytes,
    canonical_document,
    plan_id,
)
from service.domain.planner.plan import plan
from service.domain.planner.price_age import PriceAge, price_age
from service.domain.planner.request import (
    HOURS_PER_MONTH,
    MixingPolicy,
    OwnedCost,
    PlanConstraints,
    PlanDefaults,
    PlanPolicy,
    PlanRequest,
    Spread,
    WorkloadBucket,
)
from service.domain.planner.result import (
    PLAN_STATUSES,
    Alternative,
    BucketSummary,
    Fleet,
    FleetLine,
    MixDecision,
    MixRule,
    Plan,
    Redundancy,
    Rejection,
    Relaxation,
    RelaxationKind,
    Route,
    Routing,
    Savings,
)
from service.domain.vocabulary import RoutingMode

__all__ = [
    "HOURS_PER_MONTH",
    "MIN_SHAPE_QPS",
    "PLAN_ID_VERSION",
    "PLAN_STATUSES",
    "Alternative",
    "BucketSummary",
    "BudgetDraft",
    "ConstraintsDraft",
    "Fleet",
    "FleetLine",
    "MixDecision",
    "MixRule",
    "MixShare",
    "MixingDraft",
    "MixingPolicy",
    "OwnedCost",
    "Plan",
    "PlanConstraints",
    "PlanDefaults",
    "PlanDraft",
    "PlanPolicy",
    "PlanRequest",
    "PriceAge",
    "Redundancy",
    "Rejection",
    "Relaxation",
    "RelaxationKind",
    "Route",
    "Routing",
    "RoutingMode",
    "Savings",
    "SolvedPlan",
    "Spread",
    "WorkloadBucket",
    "WorkloadDraft",
    "canonical_bytes",
    "canonical_document",
    "canonical_request",
    "normalize_provider",
    "plan",
    "plan_id",
    "price_age",
    "resolve_requested_model",
]
