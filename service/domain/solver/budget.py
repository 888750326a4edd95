"""The budget: over-budget outcomes and the load-scaling solve (the most load a budget buys).

The load-scaling model (C1 with ``D[s] * lam`` on the right, C2-C5 and C6 budget) is built by
:func:`formulation.scale_model`; its notation is in :mod:`formulation`. Loads are requests/s,
budgets USD/hour (cost units inside the canon, :func:`prune.budget_in_units`).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from service.domain.errors import InvalidInput
from service.domain.solver import diagnose
from service.domain.solver.formulation import scale_model
from service.domain.solver.highs import solve_milp
from service.domain.solver.problem import FleetProblem, FleetSolution, SolveStatus
from service.domain.solver.prune import Canon, Mode, canonicalize, load_units, select

# Reported load-within-budget is rounded down by this fraction (solver feasibility tolerance).
SCALE_SAFETY = 1e-6


def apply_budget(
    canon: Canon, solution: FleetSolution, gpu_id: str | None, scale: bool
) -> FleetSolution:
    """Apply the budget: over it, the status becomes ``over_budget`` (a ``time_limit`` status is
    kept, with a ``budget`` reason) and, if ``scale``, the load-scaling solve runs."""
    if canon.budget_usd_per_hour is None or not solution.has_fleet:
        return solution
    index = {key: g for g, key in enumerate(canon.keys)}
    cost_units = math.fsum(float(canon.cost[index[key]]) * n for key, n in solution.units)
    if canon.budget_units is None or cost_units <= canon.budget_units:
        return solution
    shortfall = solution.usd_per_hour - canon.budget_usd_per_hour
    reason = diagnose.budget_reason(shortfall)
    status = SolveStatus.OVER_BUDGET if solution.status is SolveStatus.OPTIMAL else solution.status
    max_qps = _max_scale_qps(canon, gpu_id) if scale else None
    return replace(
        solution,
        status=status,
        binding=tuple(sorted({*solution.binding, "budget"})),
        max_qps_within_budget=max_qps,
        reasons=(*solution.reasons, reason),
    )


def _max_scale(canon: Canon, gpu_id: str | None) -> float:
    """Largest ``lam`` such that ``D * lam`` fits C2-C6 (0.0 when nothing fits). One option
    and no single-type rule: its most units ``U`` carry ``U / L`` times the demand, if those
    units host ``min_replicas``. If HiGHS stops at its time limit, the best ``lam`` it found
    (a lower bound)."""
    if not bool(canon.demanded.any()) or canon.budget_units is None:
        return 0.0
    if diagnose.coverage_reasons(canon, gpu_id) or diagnose.spread_reasons(canon, gpu_id):
        return 0.0
    sel = select(canon, Mode.SCALE, gpu_id)
    if sel.size == 0:
        return 0.0
    if sel.size == 1 and not sel.single_type and not canon.spread:
        g = int(sel.cols[0])
        if bool(np.any(canon.cap[canon.demanded, g] <= 0.0)):
            return 0.0
        units = float(sel.upper[0])
        if units * float(canon.rpu[g]) < canon.min_replicas or units < canon.line_units[g]:
            return 0.0
        return units / float(load_units(canon, sel.cols)[0])
    model, lay = scale_model(canon, sel)
    result = solve_milp(model, time_limit_s=canon.time_limit_s)
    if result.x is None:
        return 0.0
    return max(0.0, float(result.x[lay.e0]))


def _max_scale_qps(canon: Canon, gpu_id: str | None) -> float:
    """:func:`_max_scale` as total offered requests/s before headroom, rounded down by
    :data:`SCALE_SAFETY`."""
    return _max_scale(canon, gpu_id) * canon.raw_demand_total * (1.0 - SCALE_SAFETY)


def max_qps_within_budget(problem: FleetProblem, gpu_id: str | None = None) -> float:
    """Total offered load in requests/s, BEFORE headroom, that a fleet within
    ``problem.budget_usd_per_hour`` serves, keeping each bucket's share of the demand and every
    other constraint (headroom, caps, ``min_replicas``, ``allow_mix``); of ``gpu_id`` alone
    when given.

    0.0 when nothing fits the budget, and when the workload has no demand (no mix to scale).
    Raises :class:`InvalidInput` when the problem has no budget.
    """
    if problem.budget_usd_per_hour is None:
        raise InvalidInput("max_qps_within_budget needs a budget", field="budget_usd_per_hour")
    return _max_scale_qps(canonicalize(problem), gpu_id)
