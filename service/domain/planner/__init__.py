"""Planner: fleet request + catalog snapshot -> cheapest GPU fleet with explanations.

Public API::

    plan(request: PlanRequest, snapshot: CatalogSnapshot) -> Plan
"""

from service.domain.planner.plan import plan
from service.domain.planner.request import (
    HOURS_PER_MONTH,
    OwnedCost,
    PlanConstraints,
    PlanRequest,
    Pricing,
    WorkloadBucket,
)
from service.domain.planner.result import (
    Alternative,
    BucketSummary,
    Fleet,
    FleetLine,
    Plan,
    PlanStatus,
    Rejection,
    Savings,
)

__all__ = [
    "HOURS_PER_MONTH",
    "Alternative",
    "BucketSummary",
    "Fleet",
    "FleetLine",
    "OwnedCost",
    "Plan",
    "PlanConstraints",
    "PlanRequest",
    "PlanStatus",
    "Pricing",
    "Rejection",
    "Savings",
    "WorkloadBucket",
    "plan",
]
