"""What-if re-solves: how much each constraint costs.

Separate from :mod:`diagnose` because it solves again (one MILP per constraint): the planner
calls it when it wants sentences like "the 16-card cap on h100-sxm adds 3.20 USD/hour".
A cap can be costly without being active (it may push the fleet off a GPU entirely), so by
default every cap in the problem is priced, not only the binding labels.
"""

from __future__ import annotations

import math
from dataclasses import replace

from service.domain.solver.min_cost import solve_fleet
from service.domain.solver.problem import FleetOption, FleetProblem, FleetSolution, SolveStatus


def constraint_labels(problem: FleetProblem) -> tuple[str, ...]:
    """Every relaxable constraint of ``problem``, sorted: ``max_cards:<gpu>`` for capped GPUs
    that some option uses, ``max_units:<option>`` (the option's unit cap), ``min_replicas``
    (model replicas in the fleet and on each line, when either is set), ``spread`` (places
    and surviving the loss of one, when asked) and ``single_type`` (when mixing is
    disallowed). Relaxing one removes it and keeps everything else, ``replicas_per_unit``
    included."""
    gpus = {o.gpu_id for o in problem.options}
    labels = [f"max_cards:{gpu}" for gpu, _ in problem.max_cards if gpu in gpus]
    labels += [f"max_units:{o.key}" for o in problem.options if o.max_units is not None]
    if problem.min_replicas > 0 or problem.line_min_replicas > 1:
        labels.append("min_replicas")
    if problem.min_providers >= 2 or problem.min_regions >= 2:
        labels.append("spread")
    if not problem.allow_mix:
        labels.append("single_type")
    return tuple(sorted(labels))


def _relaxed(problem: FleetProblem, label: str) -> FleetProblem | None:
    kind, _, subject = label.partition(":")
    if kind == "max_cards":
        return replace(
            problem, max_cards=tuple((gpu, n) for gpu, n in problem.max_cards if gpu != subject)
        )
    if kind == "max_units":
        options: tuple[FleetOption, ...] = tuple(
            replace(o, max_units=None) if o.key == subject else o for o in problem.options
        )
        return replace(problem, options=options)
    if kind == "min_replicas":
        return replace(problem, min_replicas=0, line_min_replicas=0)
    if kind == "spread":
        return replace(problem, min_providers=0, min_regions=0)
    if kind == "single_type":
        return replace(problem, allow_mix=True)
    return None


def relaxed_costs(
    problem: FleetProblem,
    labels: tuple[str, ...],
    known_usd_per_hour: float | None = None,
    *,
    infeasible_as_inf: bool = False,
) -> dict[str, float]:
    """``label -> USD/hour`` of the cheapest fleet with that one constraint removed (budget
    ignored; one cost-only MILP each); unknown labels and re-solves not proven optimal are left
    out. ``known_usd_per_hour``: the cost of a fleet feasible for ``problem`` (it stays feasible
    with any constraint removed), which bounds each re-solve without changing it.
    ``infeasible_as_inf``: a relaxed problem proven to have no fleet gives ``inf`` (for a
    caller taking the least over several scopes) rather than being left out."""
    base = replace(problem, budget_usd_per_hour=None)
    out: dict[str, float] = {}
    for label in sorted(labels):
        relaxed = _relaxed(base, label)
        if relaxed is None:
            continue
        cheaper = solve_fleet(relaxed, cost_only=True, known_usd_per_hour=known_usd_per_hour)
        if cheaper.status is SolveStatus.OPTIMAL:
            out[label] = cheaper.usd_per_hour
        elif infeasible_as_inf and cheaper.status is SolveStatus.INFEASIBLE:
            out[label] = math.inf
    return out


def relaxation_savings(
    problem: FleetProblem,
    solution: FleetSolution,
    labels: tuple[str, ...] | None = None,
    relaxed: dict[str, float] | None = None,
) -> tuple[tuple[str, float], ...]:
    """``(label, USD/hour saved)``: the cost of ``solution`` minus the cost of the cheapest
    fleet with that one constraint removed (budget ignored). 0.0 means it costs nothing.

    ``labels`` defaults to :func:`constraint_labels` (one MILP each); unknown labels and labels
    whose relaxed re-solve is not proven optimal are left out. Sorted by label. Only the
    relaxed fleet's cost is used, so each re-solve skips the fewest-cards stage.
    ``relaxed``: those costs already solved (:func:`relaxed_costs` for these labels), e.g. while
    the caller did other work.
    """
    if not solution.has_fleet:
        return ()
    wanted = constraint_labels(problem) if labels is None else labels
    if relaxed is None:
        # ``solution`` stays feasible with one constraint removed: its cost bounds the search.
        relaxed = relaxed_costs(problem, wanted, solution.usd_per_hour)
    return tuple(
        (label, max(0.0, solution.usd_per_hour - relaxed[label]))
        for label in sorted(wanted)
        if label in relaxed
    )
