"""Exact minimum-cost fleets of one GPU without HiGHS, when its options are at most two
*replica types* sold in several instance sizes.

A single-GPU scope (the planner's "alternatives") often keeps more than the two options
:mod:`exact` handles: one replica (a tensor-parallel degree) sold as 1-, 2-, 4- and 8-card
instances, beside a larger degree for long prompts. Units of options whose capacities are
proportional to their replicas per unit (``cap[:, g] = r[g] * kappa_t``, the same replica
``t`` in another instance size) differ only in granularity and price, so the load only sees
``R[t]``, the replicas of each type (:mod:`formulation` notation; counts of units are ``x``):

* ``F_t(R)``: the cheapest units of type ``t``'s options hosting at least ``R`` replicas,
  lexicographically (cost units, then cards): a covering knapsack, solved by dynamic
  programming over ``R = 0..R_max`` (ties: the option whose key sorts first);
* one type: ``R = max(ceil(L), m)`` with ``L = sum_s D[s] / kappa[s]`` replicas of load and
  ``m`` the replicas C4 asks for;
* two types ``a`` and ``b``: for each ``R[a]`` in ``0..R_max[a]`` the fewest ``b`` replicas
  that carry the rest is the fractional knapsack of :mod:`exact` (``a``'s time to the shapes
  in decreasing ``kappa_a / kappa_b``), and ``R[b] = max(that, m - R[a])``; the fleet is
  ``F_a(R[a]) + F_b(R[b])`` at the best ``R[a]`` (ties: fewer replicas of the type whose
  first key sorts first).

This is the MILP's optimum: any feasible fleet has replicas ``R`` that carry the load, and
costs at least ``F_a(R[a]) + F_b(R[b])`` in (cost, cards), ``F_b`` never falls as ``R``
grows; the fleet found is feasible and within the MILP's bounds (a cheapest covering never
holds more than ``ceil(R / r[g])`` units of ``g``). The load of each type is split between
its options in proportion to their replicas. Scopes with caps (``max_units`` or a card cap),
more than two replica types, more than :data:`MAX_REPLICAS` replicas of a type, spread over
providers or regions, shared routing or a line minimum above one replica are left to the MILP.
"""

from __future__ import annotations

import math

import numpy as np

from service.domain.solver.prune import Canon, Fleet, IntArray, Selection, ceil_load

# Replicas of one type up to which the covering knapsack is tabulated (else the MILP).
MAX_REPLICAS = 2_000
# Relative tolerance for "the same replica": capacities per replica equal to rounding.
_SAME_REPLICA_RTOL = 1e-12


def replica_type_fleet(canon: Canon, sel: Selection) -> tuple[bool, Fleet | None]:
    """``(handled, fleet)`` for a one-GPU scope (see module docstring); ``handled`` is False
    when the scope is not of that form (use the MILP), ``fleet`` ``None`` when infeasible."""
    cols = sel.cols
    if cols.size == 0 or np.unique(canon.gpu_of[cols]).size != 1 or sel.type_rows:
        return False, None
    if canon.spread or canon.shared or canon.line_min_replicas > 1:
        return False, None  # spread, shared routing and line minimums: the MILP
    if np.isfinite(canon.max_units[cols]).any() or math.isfinite(
        float(canon.card_cap[int(canon.gpu_of[cols[0]])])
    ):
        return False, None
    groups = _groups(canon, cols)
    if groups is None or len(groups) > 2:
        return False, None
    demanded = canon.demanded
    kappa = [canon.cap[demanded][:, cols[g[0]]] / float(canon.rpu[cols[g[0]]]) for g in groups]
    demand = canon.demand[demanded]
    m = float(canon.min_replicas)
    reach = [_replicas_alone(demand, k, m) for k in kappa]
    if max(reach) > MAX_REPLICAS:
        return False, None
    tables = [_cover(canon, cols[g], int(r)) for g, r in zip(groups, reach, strict=True)]
    if len(groups) == 1:
        if bool(np.any(kappa[0] <= 0.0)):
            return True, None
        replicas = [int(reach[0])]
    else:
        found = _two_types(kappa, demand, m, tables)
        if found is None:
            return True, None
        replicas = found
    x = np.zeros(len(canon.keys), dtype=np.int64)
    for g, table, r in zip(groups, tables, replicas, strict=True):
        x[cols[g]] = table.counts(r)
    return True, Fleet(x, _served(canon, cols, groups, kappa, demand, replicas, x))


def _groups(canon: Canon, cols: IntArray) -> list[IntArray] | None:
    """Selection indices grouped by replica type (capacities per replica equal), in key order
    of their first member; ``None`` when a unit's capacity is not a whole replicas' worth."""
    per_replica = canon.cap[canon.demanded][:, cols] / canon.rpu[cols].astype(np.float64)
    members: list[list[int]] = []
    for j in range(cols.size):
        for group in members:
            if np.allclose(
                per_replica[:, j], per_replica[:, group[0]], rtol=_SAME_REPLICA_RTOL, atol=0.0
            ):
                group.append(j)
                break
        else:
            members.append([j])
    return [np.array(g, dtype=np.int64) for g in members]


def _replicas_alone(demand: np.ndarray, kappa: np.ndarray, m: float) -> float:
    """Replicas of one type that carry all the load it can serve and host ``m`` replicas."""
    servable = kappa > 0.0
    load = float(np.sum(demand[servable] / kappa[servable]))
    return max(float(ceil_load(np.array([load]))[0]), m)


class _Cover:
    """``F_t``: per replica count ``R``, the cheapest (cost units, cards) units of one type's
    options hosting at least ``R`` replicas, and the option added last."""

    def __init__(self, cost: list[float], cards: list[float], last: list[int], sizes: list[int]):
        self.cost = np.array(cost)
        self.cards = np.array(cards)
        self._last = last
        self._sizes = sizes

    def counts(self, replicas: int) -> IntArray:
        out = np.zeros(len(self._sizes), dtype=np.int64)
        r = replicas
        while r > 0:
            j = self._last[r]
            out[j] += 1
            r = max(0, r - self._sizes[j])
        return out


def _cover(canon: Canon, cols: IntArray, r_max: int) -> _Cover:
    """The covering knapsack ``F_t`` for ``R = 0..r_max`` over the options ``cols`` (one
    replica type): ``F(R) = min_g F(max(0, R - r[g])) + (cost[g], cards[g])``."""
    costs = [float(c) for c in canon.cost[cols]]
    cards = [float(c) for c in canon.tp[cols]]
    sizes = [int(r) for r in canon.rpu[cols]]
    best_cost = [0.0] * (r_max + 1)
    best_cards = [0.0] * (r_max + 1)
    last = [-1] * (r_max + 1)
    for r in range(1, r_max + 1):
        pick = -1
        c_best = k_best = math.inf
        for j, (c, k, n) in enumerate(zip(costs, cards, sizes, strict=True)):
            prev = r - n if r > n else 0
            c_new, k_new = best_cost[prev] + c, best_cards[prev] + k
            if c_new < c_best or (c_new == c_best and k_new < k_best):
                pick, c_best, k_best = j, c_new, k_new
        best_cost[r], best_cards[r], last[r] = c_best, k_best, pick
    return _Cover(best_cost, best_cards, last, sizes)


def _two_types(
    kappa: list[np.ndarray],
    demand: np.ndarray,
    m: float,
    tables: list[_Cover],
) -> list[int] | None:
    """Replicas ``[R_a, R_b]`` of the cheapest two-type fleet (see module docstring)."""
    k_a, k_b = kappa
    if bool(np.any((k_a <= 0.0) & (k_b <= 0.0))):
        return None
    only_a, only_b = k_b <= 0.0, k_a <= 0.0
    flex = np.flatnonzero(~only_a & ~only_b)
    forced_a = float(np.sum(demand[only_a] / k_a[only_a]))
    forced_b = float(np.sum(demand[only_b] / k_b[only_b]))
    order = flex[np.lexsort((flex, -(k_a[flex] / k_b[flex])))]
    cum_a = np.concatenate(([0.0], np.cumsum(demand[order] / k_a[order])))
    time_b = demand[order] / k_b[order]
    left_b = float(np.sum(time_b)) - np.concatenate(([0.0], np.cumsum(time_b)))
    r_a = np.arange(0.0, float(tables[0].cost.size))
    load_b = forced_b + np.interp(np.clip(r_a - forced_a, 0.0, cum_a[-1]), cum_a, left_b)
    r_b = np.maximum(ceil_load(load_b), np.maximum(m - r_a, 0.0))
    ok = (r_a >= float(ceil_load(np.array([forced_a]))[0])) & (r_b < tables[1].cost.size)
    if not bool(ok.any()):
        return None
    rows = np.flatnonzero(ok)
    rb = r_b[rows].astype(np.int64)
    cost = tables[0].cost[rows] + tables[1].cost[rb]
    cards = tables[0].cards[rows] + tables[1].cards[rb]
    # Ties in (cost, cards): fewer replicas of ``a``, the type whose first option's key sorts
    # first (groups are in key order).
    best = int(np.lexsort((rows, cards, cost))[0])
    return [int(rows[best]), int(rb[best])]


def _served(
    canon: Canon,
    cols: IntArray,
    groups: list[IntArray],
    kappa: list[np.ndarray],
    demand: np.ndarray,
    replicas: list[int],
    x: IntArray,
) -> np.ndarray:
    """Requests/s of each shape on each option: between two types as :func:`_two_types`
    assigns them (``a`` takes the shapes only it serves, then the others in decreasing
    ``kappa_a / kappa_b`` while its replicas last), within a type in proportion to the
    replicas of each option."""
    dem = np.flatnonzero(canon.demanded)
    by_type = np.zeros((len(groups), dem.size))
    if len(groups) == 1:
        by_type[0] = demand
    else:
        k_a, k_b = kappa
        only_a, only_b = k_b <= 0.0, k_a <= 0.0
        by_type[0, only_a] = demand[only_a]
        by_type[1, only_b] = demand[only_b]
        flex = np.flatnonzero(~only_a & ~only_b)
        spare = max(0.0, replicas[0] - float(np.sum(demand[only_a] / k_a[only_a])))
        for pos in flex[np.lexsort((flex, -(k_a[flex] / k_b[flex])))]:
            on_a = min(float(demand[pos]), spare * float(k_a[pos]))
            spare = max(0.0, spare - on_a / float(k_a[pos]))
            by_type[0, pos] = on_a
            by_type[1, pos] = float(demand[pos]) - on_a
    served = np.zeros_like(canon.cap)
    for t, group in enumerate(groups):
        hosted = x[cols[group]] * canon.rpu[cols[group]]
        total = float(np.sum(hosted))
        if total <= 0.0:
            continue
        for j, n in zip(group, hosted, strict=True):
            served[dem, cols[j]] = by_type[t] * (float(n) / total)
    return served
