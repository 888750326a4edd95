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
    WorkloadBucket,
)
from service.domain.planner.result import (
    PLAN_STATUSES,
    Alternative,
    BucketSummary,
    Fleet,
    FleetLine,
    Plan,
    Rejection,
    Savings,
)

__all__ = [
    "HOURS_PER_MONTH",
    "PLAN_STATUSES",
    "Alternative",
    "BucketSummary",
    "Fleet",
    "FleetLine",
    "OwnedCost",
    "Plan",
    "PlanConstraints",
    "PlanRequest",
    "Rejection",
    "Savings",
    "WorkloadBucket",
    "plan",
]
