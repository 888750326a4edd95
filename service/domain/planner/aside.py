"""The solves a plan runs beside its policy's solve: the cheapest fleet of each GPU type alone,
then the what-if re-solves that price the request's constraints.

Plain values in (the fleet problem, the GPUs' vendors, the constraint labels) and out (solver
results), so that a helper *process* can run them: the planner hands :func:`solve_aside` to
whatever executor it is given, and on a process pool nothing here shares the GIL with the
policy's solve. Pure: same inputs, same answer, whichever process computes it.
"""

from __future__ import annotations

from collections.abc import Mapping

from service.domain.planner.mixing import relaxed_costs_within_rule
from service.domain.solver import FleetProblem, FleetSolution, cheapest_single_type

Aside = tuple[dict[str, FleetSolution], dict[str, float] | None]
"""The single-type fleets by GPU id, and the what-if costs by label (``None``: no labels)."""


def solve_aside(
    problem: FleetProblem, vendors: Mapping[str, str] | None, labels: tuple[str, ...]
) -> Aside:
    """The cheapest fleet of each GPU alone (:func:`cheapest_single_type`), and the cost of
    the cheapest fleet without each of ``labels`` within the vendor rule (``vendors``:
    :func:`~service.domain.planner.mixing.scope_vendors`), bounded by those single types."""
    singles = cheapest_single_type(problem)
    relaxed = relaxed_costs_within_rule(problem, vendors, labels, singles) if labels else None
    return singles, relaxed
