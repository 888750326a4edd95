"""Decoding: HiGHS' column values back into a fleet, and a fleet into a :class:`FleetSolution`.

Units: ``x[g]`` counts units of option ``g`` (what is billed); served rates are requests/s with
headroom included; costs are in cost units (:func:`prune.quantise_costs`) or USD/hour where the
name says so. Column positions follow :class:`formulation.Layout`.
"""

from __future__ import annotations

import math

import numpy as np

from service.domain.solver import diagnose
from service.domain.solver.formulation import Layout
from service.domain.solver.problem import FleetSolution, Reason, SolveStatus
from service.domain.solver.prune import Canon, Fleet, FloatArray, shared_served

# Served rates below this fraction of their bucket's demand are solver noise and dropped.
_SERVED_RTOL = 1e-9


def fleet_from_values(canon: Canon, lay: Layout, values: FloatArray) -> Fleet:
    """The fleet a HiGHS solution describes: ``x`` rounded to whole units, and the served
    rates (requests/s, headroom included) from the ``z`` columns (averaged with the survival
    scenarios' under spread), or, with one demanded shape or shared routing (no ``z``
    columns), split over the units in proportion to their capacity."""
    x = np.zeros(len(canon.keys), dtype=np.int64)
    x[lay.sel.cols] = np.rint(values[: lay.n_x]).astype(np.int64)
    served = np.zeros_like(canon.cap)
    demanded = np.flatnonzero(canon.demanded)
    if canon.shared:
        return Fleet(x, shared_served(canon, x))
    if demanded.size == 1:
        # One shape: every unit runs at the same share of its capacity.
        s = int(demanded[0])
        capacity = canon.cap[s] * x
        total = float(capacity.sum())
        if total > 0.0:
            served[s] = canon.demand[s] * capacity / total
        return Fleet(x, served)
    z = np.maximum(values[lay.z0 : lay.y0], 0.0)
    served[lay.pair_s, lay.sel.cols[lay.pair_j]] = z
    return Fleet(x, _with_survivors(lay, values, served))


def _with_survivors(lay: Layout, values: FloatArray, served: FloatArray) -> FloatArray:
    """With spread, the mean of the assignment and every survival scenario's (C9): each of
    them serves every bucket within the units, so their mean does too, and it spreads the
    load over all the lines (active-active) where the assignment alone may leave the lines
    kept for a lost provider idle."""
    places = lay.spread
    if places.sz_s.size == 0:
        return served
    total = served.copy()
    scenario_z = np.maximum(values[lay.sz0 : lay.e0], 0.0)
    for q in range(places.lost_place.size):
        mine = places.sz_q == q
        one = np.zeros_like(served)
        one[places.sz_s[mine], lay.sel.cols[places.sz_j[mine]]] = scenario_z[mine]
        total += one
    out: FloatArray = total / float(1 + places.lost_place.size)
    return out


def fleet_cost_units(canon: Canon, fleet: Fleet) -> float:
    """Cost of ``fleet`` in cost units (exact integers, :func:`prune.quantise_costs`)."""
    return float(np.dot(canon.cost, fleet.x))


def fleet_solution(
    canon: Canon,
    fleet: Fleet,
    status: SolveStatus,
    *,
    mip_gap: float = 0.0,
    reasons: tuple[Reason, ...] = (),
) -> FleetSolution:
    """Assemble the public result. Costs are summed from the caller's USD prices in key order."""
    x = fleet.x
    used = np.flatnonzero(x > 0)
    usd = math.fsum(float(canon.usd[g]) * int(x[g]) for g in used)
    cards_per_gpu: dict[str, int] = {}
    for g in used:
        gpu = canon.gpus[int(canon.gpu_of[g])]
        cards_per_gpu[gpu] = cards_per_gpu.get(gpu, 0) + int(x[g]) * int(canon.tp[g])
    served: list[tuple[str, str, float]] = []
    load = np.zeros(len(canon.keys))
    for s, g in zip(*np.nonzero(fleet.served), strict=True):
        qps = float(fleet.served[s, g])
        if qps <= _SERVED_RTOL * float(canon.demand[s]) or x[g] == 0:
            continue
        served.append((canon.bucket_keys[s], canon.keys[g], qps))
        load[g] += qps / float(canon.cap[s, g])
    utilization = tuple(
        (canon.keys[g], min(1.0, max(0.0, float(load[g]) / int(x[g])))) for g in used
    )
    return FleetSolution(
        status=status,
        usd_per_hour=usd,
        units=tuple((canon.keys[g], int(x[g])) for g in used),
        model_replicas=tuple((canon.keys[g], int(x[g]) * int(canon.rpu[g])) for g in used),
        cards=tuple(sorted(cards_per_gpu.items())),
        served_qps=tuple(sorted(served)),
        utilization=utilization,
        binding=diagnose.active_constraints(canon, fleet.x, fleet_cost_units(canon, fleet)),
        mip_gap=mip_gap,
        reasons=reasons,
    )


def infeasible_solution(reasons: tuple[Reason, ...]) -> FleetSolution:
    return FleetSolution(status=SolveStatus.INFEASIBLE, reasons=reasons)
