"""Fleet solver: candidates table -> MILP (HiGHS) -> typed result.

Public API::

    solve_fleet(problem) -> FleetSolution
    max_qps_within_budget(problem, gpu_id=None) -> float
    solve_single_type(problem, gpu_id, *, with_max_qps=False) -> FleetSolution
    cheapest_single_type(problem, *, with_max_qps=False) -> dict[str, FleetSolution]
    relaxation_savings(problem, solution, labels=None, relaxed=None)
        -> tuple[tuple[str, float], ...]
    relaxed_costs(problem, labels, known_usd_per_hour=None) -> dict[str, float]
    solve_fleet_pricing_min_replicas(problem) -> (FleetSolution, float | None)
    solve_fleet_beating(problem, beat) -> FleetSolution | None
    pricing_min_replicas_beating(problem, beat, beat_relaxed)
        -> (FleetSolution | None, float | None)
    constraint_labels(problem) -> tuple[str, ...]

The solver counts *units* (what is billed: one replica, or a cloud instance hosting
``FleetOption.replicas_per_unit`` model replicas on ``cards_per_unit`` cards);
``min_replicas`` counts model replicas. ``FleetSolution.units`` is ``(option key, units)``
and ``FleetOption.max_units`` caps units; ``FleetSolution.model_replicas`` /
``total_replicas`` count model replicas.

Modules, in the order a solve uses them:

* :mod:`.problem`: inputs and outputs (``FleetProblem``, ``FleetSolution``, reasons).
* :mod:`.prune`: the candidates table as arrays, scope, bounds and dominance pruning.
* :mod:`.formulation`: the MILP (notation, units, objective, constraints C1-C6, tie-break)
  and the models built from it.
* :mod:`.exact`: closed-form fleets for scopes of one or two options (no HiGHS call).
* :mod:`.replica_types`: exact one-GPU fleets of up to four replica types sold in several
  instance sizes, line minimums included (no branch and bound).
* :mod:`.many_types`: three or four replica types: the load's carrying inequalities and the
  bounded enumeration of replica counts.
* :mod:`.highs`: the one place that calls HiGHS.
* :mod:`.decode`: HiGHS' values back into fleets and ``FleetSolution``.
* :mod:`.min_cost`: ``solve_fleet``, the cheapest fleet, its tie-break and infeasibility
  diagnosis.
* :mod:`.budget`: over-budget outcomes and ``max_qps_within_budget`` (load scaling).
* :mod:`.single_type`: ``solve_single_type`` and ``cheapest_single_type``.
* :mod:`.diagnose`: binding constraints and reasons (no solver calls);
  :mod:`.whatif`: what each constraint costs (re-solves).
"""

from service.domain.solver.budget import max_qps_within_budget
from service.domain.solver.min_cost import Rank, solve_fleet, solve_fleet_beating
from service.domain.solver.problem import (
    Bucket,
    FleetOption,
    FleetProblem,
    FleetSolution,
    Reason,
    ReasonCode,
    SolveStatus,
)
from service.domain.solver.single_type import cheapest_single_type, solve_single_type
from service.domain.solver.whatif import (
    constraint_labels,
    pricing_min_replicas_beating,
    relaxation_savings,
    relaxed_costs,
    solve_fleet_pricing_min_replicas,
)

__all__ = [
    "Bucket",
    "FleetOption",
    "FleetProblem",
    "FleetSolution",
    "Rank",
    "Reason",
    "ReasonCode",
    "SolveStatus",
    "cheapest_single_type",
    "constraint_labels",
    "max_qps_within_budget",
    "pricing_min_replicas_beating",
    "relaxation_savings",
    "relaxed_costs",
    "solve_fleet",
    "solve_fleet_beating",
    "solve_fleet_pricing_min_replicas",
    "solve_single_type",
]
