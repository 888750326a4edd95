"""The cost solve: the cheapest fleet in scope, its fewest-cards tie-break, and why there is
none when the caps admit no fleet.

The model, its notation (``x[g]`` units of option ``g``, costs in cost units) and the proof that
the one-stage objective ``W * cost + cards`` never trades cost for cards are in
:mod:`formulation`; pruning and bounds in :mod:`prune`; scopes of one or two options are solved
in closed form by :mod:`exact`, one-GPU scopes of up to four replica types by
:mod:`replica_types` (with :mod:`many_types`). Every HiGHS call is limited to
``time_limit_s`` seconds and starts from the value of a known feasible fleet
(``known_value``): the cheapest of one option alone and of the two-option fleets
:mod:`first_fleet` scores.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from service.domain.solver import diagnose
from service.domain.solver.budget import apply_budget
from service.domain.solver.decode import (
    fleet_cost_units,
    fleet_from_values,
    fleet_solution,
    infeasible_solution,
)
from service.domain.solver.exact import exact_fleet
from service.domain.solver.first_fleet import two_option_objective
from service.domain.solver.formulation import (
    Layout,
    card_weight,
    cost_model,
    cost_upper_bound,
    elastic_model,
    one_option_objective,
    tiebreak_model,
)
from service.domain.solver.highs import MilpModel, Outcome, solve_milp
from service.domain.solver.problem import FleetProblem, FleetSolution, Reason, SolveStatus
from service.domain.solver.prune import (
    Canon,
    Fleet,
    IntArray,
    Mode,
    canonicalize,
    select,
    usd_in_cost_units,
)
from service.domain.solver.replica_types import replica_type_fleet

# Largest one-stage objective near the optimum (W times a feasible fleet's cost units).
ONE_STAGE_MAX_OBJECTIVE = 1e10


def _empty_fleet(canon: Canon) -> Fleet:
    return Fleet(np.zeros(len(canon.keys), dtype=np.int64), np.zeros_like(canon.cap))


Rank = tuple[float, float]
"""A fleet's place in the planner's order: (USD/hour, cards), the cheaper first, then the one
with fewer cards. As a rank to beat, ``cards`` may be ``inf``: any fleet costing at most that
much ranks before it."""


def minimum_cost_fleet(
    canon: Canon,
    gpu_id: str | None,
    *,
    cost_only: bool = False,
    known_usd_per_hour: float | None = None,
    known_fleet: IntArray | None = None,
) -> FleetSolution:
    """The cheapest fleet in scope (all options, or ``gpu_id``'s), before the budget check:
    coverage reasons, pruning, the exact path or the MILP (with its tie-break), diagnosis.

    ``cost_only``: only the cheapest cost is wanted (a curve point): the MILP minimises cost
    alone, so among equal-cost fleets any one comes back (no fewest-cards stage), and an
    infeasible scope is not diagnosed (no reasons; the elastic solves are skipped).
    ``known_usd_per_hour`` (with ``cost_only``): the cost of a fleet known to be feasible in
    this scope, which bounds the MILP's search (see :func:`highs.solve_milp`); the optimum is
    the same. ``known_fleet``: units per option of a fleet known to be feasible in this scope
    (any objective), which bounds the search the same way."""
    found = _cheapest(canon, gpu_id, _Ask(cost_only, known_usd_per_hour, known_fleet, None))
    assert found is not None  # only a rank to beat can leave a scope without an answer
    return found


def cheapest_fleet_beating(
    canon: Canon,
    beat: Rank,
    *,
    known_fleet: IntArray | None = None,
    cost_only: bool = False,
    known_usd_per_hour: float | None = None,
) -> FleetSolution | None:
    """:func:`minimum_cost_fleet` of the whole scope when its fleet ranks before ``beat``
    (a fleet known elsewhere: cheaper, or as cheap with fewer cards), else ``None``: no fleet
    here ranks before it, this scope cannot hold the answer, and nothing is diagnosed.

    The MILP only searches fleets ranking before ``beat`` (HiGHS' objective bound, see
    :func:`highs.solve_milp` ``cutoff``), which the LP relaxation alone often rules out: a
    scope whose best fleet is dearer than one known in another scope costs a fraction of its
    whole solve. A fleet that comes back is the scope's own optimum, as without ``beat``, and
    ranks before it (a scope solved in closed form, or a price not representable in this
    scope's cost units, where the bound is rounded up, is compared after the solve).
    ``known_fleet``, ``cost_only`` and ``known_usd_per_hour`` as for
    :func:`minimum_cost_fleet` (with ``cost_only``, give ``beat`` any number of cards)."""
    found = _cheapest(canon, None, _Ask(cost_only, known_usd_per_hour, known_fleet, beat))
    if found is None or not found.has_fleet:
        return found
    ranks_before = (round(found.usd_per_hour, 9), found.total_cards) < (round(beat[0], 9), beat[1])
    return found if ranks_before else None


@dataclass(frozen=True, slots=True)
class _Ask:
    """What a solve is asked for: the arguments of :func:`minimum_cost_fleet` and the rank of
    :func:`cheapest_fleet_beating` (``None``: none)."""

    cost_only: bool
    known_usd_per_hour: float | None
    known_fleet: IntArray | None
    beat: Rank | None


def _cheapest(canon: Canon, gpu_id: str | None, ask: _Ask) -> FleetSolution | None:
    """:func:`minimum_cost_fleet`, or with ``ask.beat`` :func:`cheapest_fleet_beating`."""
    cost_only, known_usd_per_hour, known_fleet, beat = (
        ask.cost_only,
        ask.known_usd_per_hour,
        ask.known_fleet,
        ask.beat,
    )
    reasons = diagnose.coverage_reasons(canon, gpu_id) or diagnose.spread_reasons(canon, gpu_id)
    if reasons:
        return infeasible_solution(reasons)

    def infeasible() -> FleetSolution:
        if cost_only:
            return infeasible_solution(())
        return infeasible_solution(_infeasibility_reasons(canon, gpu_id))

    sel = select(canon, Mode.COST, gpu_id)
    needs_fleet = bool(canon.demanded.any()) or canon.min_replicas > 0
    if sel.size == 0:
        if not needs_fleet:
            return fleet_solution(canon, _empty_fleet(canon), SolveStatus.OPTIMAL)
        return infeasible()
    handled, exact = exact_fleet(canon, sel)
    if not handled:
        handled, exact = replica_type_fleet(canon, sel)
    if handled:
        if exact is None:
            return infeasible()
        return fleet_solution(canon, exact, SolveStatus.OPTIMAL)

    if sel.type_rows:
        decided, loose = _within_type_rule_anyway(canon, gpu_id, ask)
        if decided:
            return loose
    # One stage when W * cost stays well inside exact float range, else two stages.
    cost_bound = cost_upper_bound(canon, sel)
    weight = card_weight(canon, sel, cost_bound)
    one_stage = not cost_only and cost_bound * weight <= ONE_STAGE_MAX_OBJECTIVE
    model, lay = cost_model(canon, sel, card_weight=weight if one_stage else None)
    known = _least(one_option_objective(canon, sel, model), two_option_objective(canon, sel, model))
    if cost_only and known_usd_per_hour is not None:
        units = usd_in_cost_units(canon, known_usd_per_hour)
        known = units if known is None else min(known, units)
    if known_fleet is not None:
        value = float(np.dot(canon.cost, known_fleet))
        if one_stage:
            value = value * weight + float(np.dot(canon.tp, known_fleet))
        known = value if known is None else min(known, value)
    cutoff = None
    if beat is not None:
        # fleets ranking before ``beat``: cheaper, or as cheap with fewer cards
        beat_units = usd_in_cost_units(canon, beat[0])
        if math.isfinite(beat_units):
            # ``weight`` exceeds any fleet's cards (see :func:`card_weight`)
            cards = min(beat[1], weight)
            cutoff = beat_units * weight + cards - 1.0 if one_stage else beat_units
    first = solve_milp(model, time_limit_s=canon.time_limit_s, known_value=known, cutoff=cutoff)
    if first.outcome is Outcome.CUT_OFF:
        return None
    if first.outcome is Outcome.INFEASIBLE:
        return infeasible()
    if first.outcome is Outcome.TIME_LIMIT_NO_SOLUTION:
        return infeasible_solution((diagnose.time_limit_reason(),))
    if first.x is None or first.outcome is Outcome.ERROR:
        return infeasible_solution((diagnose.solver_error_reason(),))
    fleet = fleet_from_values(canon, lay, first.x)
    if first.outcome is Outcome.TIME_LIMIT_WITH_SOLUTION:
        return fleet_solution(
            canon,
            fleet,
            SolveStatus.TIME_LIMIT,
            mip_gap=first.mip_gap,
            reasons=(diagnose.time_limit_reason(found=True),),
        )
    if not one_stage and not cost_only:
        fleet = _tiebreak(canon, model, lay, fleet)
    return fleet_solution(canon, fleet, SolveStatus.OPTIMAL)


def _least(*values: float | None) -> float | None:
    """The least of the known values, ``None`` if none is known."""
    known = [v for v in values if v is not None]
    return min(known) if known else None


def _within_type_rule_anyway(
    canon: Canon, gpu_id: str | None, ask: _Ask
) -> tuple[bool, FleetSolution | None]:
    """``(True, fleet)``: the cheapest fleet without the GPU-type rule (one type, or at most
    ``max_gpu_types``), which keeps to the rule anyway; ``(True, None)``: no fleet without the
    rule ranks before ``ask.beat``, so none with it does; ``(False, None)``: solve with the rule's
    binaries.

    Dropping the rule relaxes the problem, so its optimum is the rule's optimum whenever it
    uses few enough types, with the same (cost, cards). The relaxed model has no type
    binaries, and options of one GPU may be dominated by another's (:func:`prune.dominated`),
    so it is smaller and solves faster: measured on ``bench/plan_latency.py`` requests, the
    plain solve takes about 60% of the time of the solve with the rule, and its fleet keeps to
    a two-type limit in about five plans out of six."""
    free = replace(canon, allow_mix=True, max_gpu_types=0)
    found = _cheapest(free, gpu_id, ask)
    if found is None:
        return True, None
    limit = canon.max_gpu_types if canon.allow_mix else 1
    if found.status is SolveStatus.OPTIMAL and len(found.cards) <= limit:
        return True, found
    return False, None


def _tiebreak(canon: Canon, model: MilpModel, lay: Layout, fleet: Fleet) -> Fleet:
    """Stage 2 of the two-stage form: the fewest-cards fleet costing at most ``fleet``'s cost
    units; ``fleet`` itself if stage 2 finds nothing, or something dearer or with more cards."""
    cost_star = fleet_cost_units(canon, fleet)
    if cost_star <= 0.0:
        return fleet
    second = solve_milp(
        tiebreak_model(model, canon, lay, cost_star),
        time_limit_s=canon.time_limit_s,
        known_value=float(np.dot(canon.weight, fleet.x)),  # stage 1's fleet is feasible
    )
    if second.x is None:
        return fleet
    candidate = fleet_from_values(canon, lay, second.x)
    if fleet_cost_units(canon, candidate) > cost_star:
        return fleet
    weight = float(np.dot(canon.weight, candidate.x))
    if weight > float(np.dot(canon.weight, fleet.x)):
        return fleet
    return candidate


def _infeasibility_reasons(canon: Canon, gpu_id: str | None) -> tuple[Reason, ...]:
    """Why no fleet fits the caps: min_replicas beyond what the caps allow, each cap that must
    grow (elastic solve: caps soft, minimise cards over them) and, for single-type problems,
    whether a mix would fit."""
    reasons: list[Reason] = []
    for blamed in (
        diagnose.line_min_replicas_reason(canon, gpu_id),
        diagnose.min_replicas_reason(canon, gpu_id),
    ):
        if blamed is not None:
            reasons.append(blamed)
    sel = select(canon, Mode.ELASTIC, gpu_id)
    if sel.size:
        model, lay, caps = elastic_model(canon, sel)
        result = solve_milp(model, time_limit_s=canon.time_limit_s)
        if result.x is not None:
            for k, cap_row in enumerate(caps):
                excess = float(result.x[lay.e0 + k])
                if excess > 0.5:
                    reasons.append(diagnose.cap_reason(cap_row.code, cap_row.subject, excess))
        elif result.outcome is Outcome.TIME_LIMIT_NO_SOLUTION:
            reasons.append(diagnose.time_limit_reason())
        elif canon.spread and not reasons:
            reasons.append(diagnose.spread_fit_reason(canon))
        if gpu_id is None and not canon.allow_mix and len(canon.gpus) > 1 and _mix_fits(canon):
            reasons.append(diagnose.single_type_reason())
    if not reasons:
        reasons.append(diagnose.solver_error_reason())
    return tuple(reasons)


def _mix_fits(canon: Canon) -> bool:
    """Would the caps admit a fleet if GPU types could be mixed?"""
    mixed = replace(canon, allow_mix=True)
    sel = select(mixed, Mode.ELASTIC)
    if sel.size == 0:
        return False
    model, _, _ = elastic_model(mixed, sel)
    result = solve_milp(model, time_limit_s=canon.time_limit_s)
    return result.outcome is Outcome.OPTIMAL and result.objective < 0.5


def solve_fleet(
    problem: FleetProblem, *, cost_only: bool = False, known_usd_per_hour: float | None = None
) -> FleetSolution:
    """The cheapest fleet for ``problem`` (see :mod:`formulation` for the model).

    Status ``optimal``/``infeasible``/``time_limit`` as HiGHS proves them; ``over_budget`` with
    the cheapest fleet and ``max_qps_within_budget`` when that fleet costs more than the budget.
    ``max_qps_within_budget`` is left ``None`` otherwise (call
    :func:`budget.max_qps_within_budget`).

    Makes at most three HiGHS calls, each limited to ``problem.time_limit_s`` seconds (wall
    clock, HiGHS' own timer): the cost solve (plus a tie-break stage only for huge objectives),
    then either the load-scaling solve (over budget) or the diagnosis (infeasible: caps made soft,
    and for single-type problems "would a mix fit?"). Scopes with one or two options left after
    pruning make no HiGHS call at all. If the load-scaling solve stops at its time limit, the best
    load it found is reported (a lower bound).

    ``cost_only`` (for sweeps that need the cheapest cost alone): one HiGHS call on cost, no
    fewest-cards stage, no diagnosis of an infeasible problem (see :func:`minimum_cost_fleet`);
    the cost is the same. ``known_usd_per_hour`` (with ``cost_only``): the cost of a fleet
    known to be feasible for ``problem``; it only narrows the search.
    """
    canon = canonicalize(problem)
    cheapest = minimum_cost_fleet(
        canon, None, cost_only=cost_only, known_usd_per_hour=known_usd_per_hour
    )
    return apply_budget(canon, cheapest, None, scale=True)


def solve_fleet_beating(problem: FleetProblem, beat: Rank) -> FleetSolution | None:
    """:func:`solve_fleet` of a problem without a budget when its fleet ranks before ``beat``,
    else ``None`` (see :func:`cheapest_fleet_beating`)."""
    canon = canonicalize(problem)
    return cheapest_fleet_beating(canon, beat)
