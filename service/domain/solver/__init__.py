"""Fleet solver: candidates table -> MILP (HiGHS) -> typed result.

Public API::

    solve_fleet(problem) -> FleetSolution
    max_qps_within_budget(problem) -> float
    solve_single_type(problem, gpu_id, *, with_max_qps=False) -> FleetSolution
    cheapest_single_type(problem, *, with_max_qps=False) -> dict[str, FleetSolution]
    relaxation_savings(problem, solution, labels=None) -> tuple[tuple[str, float], ...]
    constraint_labels(problem) -> tuple[str, ...]

The solver counts *units* (what is billed: one replica, or a cloud instance hosting
``FleetOption.replicas_per_unit`` model replicas on ``tensor_parallel`` cards);
``min_replicas`` counts model replicas. ``FleetSolution.units`` is ``(option key, units)``;
``FleetSolution.model_replicas`` / ``total_replicas`` count model replicas.

The formulation (notation, units, objective, constraints C1-C6, tie-break) is in
:mod:`service.domain.solver.milp`.
"""

from service.domain.solver.milp import (
    cheapest_single_type,
    max_qps_within_budget,
    solve_fleet,
    solve_single_type,
)
from service.domain.solver.problem import (
    Bucket,
    FleetOption,
    FleetProblem,
    FleetSolution,
    Reason,
    ReasonCode,
    SolveStatus,
)
from service.domain.solver.whatif import constraint_labels, relaxation_savings

__all__ = [
    "Bucket",
    "FleetOption",
    "FleetProblem",
    "FleetSolution",
    "Reason",
    "ReasonCode",
    "SolveStatus",
    "cheapest_single_type",
    "constraint_labels",
    "max_qps_within_budget",
    "relaxation_savings",
    "solve_fleet",
    "solve_single_type",
]
