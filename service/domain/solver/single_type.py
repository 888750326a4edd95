"""Single-type fleets: the cheapest fleet of one GPU type alone (any of its offers and
tensor-parallel degrees), the planner's "alternatives".

Same model, pruning and budget rule as :func:`min_cost.solve_fleet`, scoped to one ``gpu_id``;
costs in USD/hour, loads in requests/s.
"""

from __future__ import annotations

from service.domain.errors import InvalidInput
from service.domain.solver.budget import apply_budget
from service.domain.solver.min_cost import minimum_cost_fleet
from service.domain.solver.problem import FleetProblem, FleetSolution
from service.domain.solver.prune import canonicalize


def solve_single_type(
    problem: FleetProblem, gpu_id: str, *, with_max_qps: bool = False, cost_only: bool = False
) -> FleetSolution:
    """The cheapest fleet that uses only ``gpu_id`` (any of its offers and tensor-parallel
    degrees), with the budget applied as in :func:`min_cost.solve_fleet`; the load-scaling solve
    runs only if ``with_max_qps``; ``cost_only`` as in :func:`min_cost.solve_fleet`. Raises
    :class:`InvalidInput` for a GPU no option uses."""
    canon = canonicalize(problem)
    if gpu_id not in canon.gpus:
        raise InvalidInput(f"no option uses GPU {gpu_id!r}", field="gpu_id")
    solution = minimum_cost_fleet(canon, gpu_id, cost_only=cost_only)
    return apply_budget(canon, solution, gpu_id, scale=with_max_qps)


def cheapest_single_type(
    problem: FleetProblem, *, with_max_qps: bool = False, gpus: tuple[str, ...] | None = None
) -> dict[str, FleetSolution]:
    """Per GPU id (sorted), the cheapest fleet of that GPU alone: the "alternatives" list.

    GPUs that cannot meet the demand are included with status ``infeasible`` and reasons
    (``gpu_cannot_serve`` for a shape it cannot serve under the SLO, caps otherwise). The
    problem is canonicalised once; each GPU is a small MILP (or a closed form when one option
    survives pruning, the common case). ``gpus``: only these GPU ids (the solves are
    independent, so callers may split the list between threads).
    """
    canon = canonicalize(problem)
    return {
        gpu: apply_budget(canon, minimum_cost_fleet(canon, gpu), gpu, scale=with_max_qps)
        for gpu in canon.gpus
        if gpus is None or gpu in gpus
    }
