"""What-if re-solves: how much each constraint costs.

Separate from :mod:`diagnose` because it solves again (one MILP per constraint): the planner
calls it when it wants sentences like "the 16-card cap on h100-sxm adds 3.20 USD/hour".
A cap can be costly without being active (it may push the fleet off a GPU entirely), so by
default every cap in the problem is priced, not only the binding labels.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace

import numpy as np

from service.domain.solver import diagnose
from service.domain.solver.budget import apply_budget
from service.domain.solver.min_cost import (
    Rank,
    cheapest_fleet_beating,
    minimum_cost_fleet,
    solve_fleet,
)
from service.domain.solver.problem import FleetOption, FleetProblem, FleetSolution, SolveStatus
from service.domain.solver.prune import Canon, IntArray, canonicalize


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
    beat: Mapping[str, float] | None = None,
) -> dict[str, float]:
    """``label -> USD/hour`` of the cheapest fleet with that one constraint removed (budget
    ignored; one cost-only MILP each); unknown labels and re-solves not proven optimal are left
    out. ``known_usd_per_hour``: the cost of a fleet feasible for ``problem`` (it stays feasible
    with any constraint removed), which bounds each re-solve without changing it.
    ``infeasible_as_inf``: a relaxed problem proven to have no fleet gives ``inf`` (for a
    caller taking the least over several scopes) rather than being left out. ``beat`` (with
    ``infeasible_as_inf``): per label, the least cost proven in the scopes solved before; a
    re-solve searches only fleets costing at most that much and answers ``inf`` when there is
    none (:func:`~service.domain.solver.min_cost.cheapest_fleet_beating`), which leaves the
    least over the scopes unchanged."""
    base = replace(problem, budget_usd_per_hour=None)
    out: dict[str, float] = {}
    for label in sorted(labels):
        relaxed = _relaxed(base, label)
        if relaxed is None:
            continue
        least = (beat or {}).get(label) if infeasible_as_inf else None
        if least is not None and math.isfinite(least):
            below = cheapest_fleet_beating(
                canonicalize(relaxed),
                (least, math.inf),
                cost_only=True,
                known_usd_per_hour=known_usd_per_hour,
            )
            if below is None:
                out[label] = math.inf
                continue
            cheaper = below
        else:
            cheaper = solve_fleet(relaxed, cost_only=True, known_usd_per_hour=known_usd_per_hour)
        if cheaper.status is SolveStatus.OPTIMAL:
            out[label] = cheaper.usd_per_hour
        elif infeasible_as_inf and cheaper.status is SolveStatus.INFEASIBLE:
            out[label] = math.inf
    return out


def solve_fleet_pricing_min_replicas(problem: FleetProblem) -> tuple[FleetSolution, float | None]:
    """:func:`~service.domain.solver.min_cost.solve_fleet` of ``problem``, and what
    :func:`relaxed_costs` answers for ``min_replicas`` (``infeasible_as_inf``): the cost of
    the cheapest fleet without the replica floors (``min_replicas``, ``line_min_replicas``),
    ``inf`` when none exists, ``None`` when a time limit left it unproven.

    The problem without the floors is solved first, for its cheapest fleet with the fewest
    cards. Dropping constraints relaxes a problem, so when that fleet keeps the floors anyway
    it is the problem's own optimum, with the same cost and cards: one solve answers both, and
    the floors' what-if saves nothing. Otherwise the problem is solved as well, bounded by that
    fleet with its lines raised to the floors (feasible, so the optimum costs no more). On the
    requests of ``bench/plan_latency.py`` (two replicas per line asked) the fleet without the
    floors keeps them in about two vendor scopes of three; in the others the raised fleet is a
    median 4.6% above the optimum, and the bounded solve takes about 15% less time."""
    solution, relaxed = pricing_min_replicas_beating(problem, None, None)
    assert solution is not None  # only a rank to beat can leave the scope without an answer
    return solution, relaxed


def pricing_min_replicas_beating(
    problem: FleetProblem, beat: Rank | None, beat_relaxed: float | None
) -> tuple[FleetSolution | None, float | None]:
    """:func:`solve_fleet_pricing_min_replicas` of one scope among several, when only the
    cheapest of them matters (the planner's vendor scopes): ``beat`` the rank (USD/hour,
    cards) of the best fleet of the scopes solved before, ``beat_relaxed`` the least cost
    without the floors proven there (``None``: none known).

    The fleet is ``None`` when no fleet of this scope ranks before ``beat``, and the what-if
    is ``inf`` when no fleet without the floors costs less than ``beat_relaxed`` (the least
    over the scopes is then another's): :func:`~service.domain.solver.min_cost.
    cheapest_fleet_beating` only searches below them, and often its LP relaxation proves
    alone that nothing is there. Without a budget only (a budget's answer needs every scope's
    most load)."""
    canon = canonicalize(problem)
    loose = replace(
        canon,
        min_replicas=0,
        line_min_replicas=0,
        line_units=np.zeros_like(canon.line_units),
    )
    found: FleetSolution | None
    if beat_relaxed is None:
        found = minimum_cost_fleet(loose, None)
    else:
        # at most the least proven elsewhere, with any number of cards
        found = cheapest_fleet_beating(loose, (beat_relaxed, math.inf))
    relaxed: float | None = None
    raised: IntArray | None = None
    if found is None or found.status is SolveStatus.INFEASIBLE:
        relaxed = math.inf
    elif found.status is SolveStatus.OPTIMAL:
        relaxed = found.usd_per_hour
        x = _units(canon, found)
        if _keeps_floors(canon, x):
            cost_units = float(np.dot(canon.cost, x))
            kept = replace(found, binding=diagnose.active_constraints(canon, x, cost_units))
            return apply_budget(canon, kept, None, scale=True), relaxed
        raised = _raised_to_floors(canon, x)
    if beat is None:
        solution: FleetSolution | None = minimum_cost_fleet(canon, None, known_fleet=raised)
    else:
        solution = cheapest_fleet_beating(canon, beat, known_fleet=raised)
    if solution is None:
        return None, relaxed
    return apply_budget(canon, solution, None, scale=True), relaxed


def _units(canon: Canon, solution: FleetSolution) -> IntArray:
    """``solution``'s units per ``canon`` option."""
    index = {key: g for g, key in enumerate(canon.keys)}
    x = np.zeros(len(canon.keys), dtype=np.int64)
    for key, units in solution.units:
        x[index[key]] = units
    return x


def _keeps_floors(canon: Canon, x: IntArray) -> bool:
    """Fleet ``x`` hosts ``min_replicas`` and every line of it ``line_min_replicas``."""
    used = x > 0
    return int(np.dot(x, canon.rpu)) >= canon.min_replicas and not bool(
        np.any(x[used] < canon.line_units[used])
    )


def _raised_to_floors(canon: Canon, x: IntArray) -> IntArray | None:
    """Fleet ``x`` (feasible but for the replica floors) with each line raised to its floor
    and, if still short of ``min_replicas``, the line with the cheapest replica grown: a
    feasible fleet (more units serve the same load, on the same GPU types and places), so a
    bound for the solve with the floors; ``None`` where the caps forbid it."""
    raised = x.copy()
    used = raised > 0
    if not bool(used.any()):
        return None
    raised[used] = np.maximum(raised[used], canon.line_units[used].astype(np.int64))
    short = canon.min_replicas - int(np.dot(raised, canon.rpu))
    if short > 0:
        lines = np.flatnonzero(used)
        g = int(lines[np.argmin(canon.cost[lines] / canon.rpu[lines])])
        raised[g] += -(-short // int(canon.rpu[g]))
    cards = np.bincount(canon.gpu_of, weights=raised * canon.tp, minlength=len(canon.gpus))
    if bool(np.any(raised > canon.unit_cap)) or bool(np.any(cards > canon.card_cap)):
        return None
    return raised


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
