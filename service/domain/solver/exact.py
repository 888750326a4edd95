"""Exact minimum-cost fleets without HiGHS, for scopes with one or two options.

After pruning, most single-GPU scopes (the "alternatives") keep one or two options: the
smallest tensor-parallel degree that serves the short shapes and a larger one for the shapes
that need more memory. A HiGHS call costs about 1.3 ms even on such a model (measured on a
2-core machine), so these are solved here, exactly, with the same objective and tie-break as
:mod:`formulation` (cost, then cards; remaining ties: fewer units of the option whose key sorts
first). Counts are units (``x``); ``min_replicas`` ``m`` counts model replicas, ``r[g]`` per
unit (:mod:`formulation` notation).

One option ``g``: ``x = max(ceil(m / r[g]), ceil(L[g]))`` if within its bound.

With shared routing (every unit serves the whole mix) two options split the mix in one
fraction: ``x[a]`` units carry ``x[a] / L[a]`` of it and ``b`` the rest.

A line minimum (``n[g] = ceil(line_min_replicas / r[g])`` units of a used option) rules out
counts ``0 < x[a] < n[a]`` and raises a used ``b`` to ``n[b]``. Spread (a fleet surviving the
loss of a provider or region) is left to the MILP.

Two options ``a``, ``b``: for fixed ``x[a]``, the load ``b`` must carry is the minimum of a
fractional knapsack: ``a``'s unit-time goes to the shapes in decreasing order of
``cap[s,a] / cap[s,b]`` (each second of ``a`` removes the most ``b``-time there), after the
shapes only ``a`` can serve. That minimum is piecewise linear in ``x[a]`` (``np.interp`` over
the cumulative breakpoints), so ``x[b] = max(ceil(load_b), ceil((m - r[a] x[a]) / r[b]), 0)``
(the fewest ``b`` units that carry the rest and host the missing replicas) and every ``x[a]`` in
``0..U[a]`` is scored at once with numpy (``a`` is the option with the smaller bound; above
:data:`MAX_ENUMERATED` counts the MILP takes over). Enumerating ``x[a]`` and taking the least
``x[b]`` covers every optimal fleet, costs being > 0.
"""

from __future__ import annotations

import math

import numpy as np

from service.domain.solver.prune import (
    Canon,
    Fleet,
    Selection,
    ceil_load,
    load_units,
    need_units,
    shared_served,
    units_for_replicas,
)

# Scopes up to this many options per GPU are solved here.
MAX_EXACT_OPTIONS = 2
# Enumerating more unit counts than this is left to the MILP (memory, not correctness).
MAX_ENUMERATED = 200_000


def exact_fleet(canon: Canon, sel: Selection) -> tuple[bool, Fleet | None]:
    """``(handled, fleet)``: ``handled`` is False when the scope is too big for this module
    (use the MILP); ``fleet`` is ``None`` when handled and infeasible."""
    gpus = canon.gpu_of[sel.cols]
    groups = [np.flatnonzero(gpus == i) for i in np.unique(gpus)]
    if float(np.min(sel.upper)) > MAX_ENUMERATED or canon.spread:
        return False, None
    if sel.single_type:
        if any(group.size > MAX_EXACT_OPTIONS for group in groups):
            return False, None
        best: Fleet | None = None
        for group in groups:
            fleet = _group_fleet(canon, sel, group)
            if fleet is not None and (best is None or _rank(canon, fleet) < _rank(canon, best)):
                best = fleet
        return True, best
    if sel.size > MAX_EXACT_OPTIONS:
        return False, None
    return True, _group_fleet(canon, sel, np.arange(sel.size))


def _rank(canon: Canon, fleet: Fleet) -> tuple[float, float]:
    return float(np.dot(canon.cost, fleet.x)), float(np.dot(canon.tp, fleet.x))


def _group_fleet(canon: Canon, sel: Selection, group: np.ndarray) -> Fleet | None:
    if group.size == 1:
        return _one(canon, int(sel.cols[group[0]]), float(sel.upper[group[0]]))
    j_a, j_b = int(group[0]), int(group[1])
    if sel.upper[j_b] < sel.upper[j_a]:  # enumerate the shorter range
        j_a, j_b = j_b, j_a
    return _two(canon, sel, j_a, j_b)


def _one(canon: Canon, g: int, upper: float) -> Fleet | None:
    demanded = canon.demanded
    if bool(np.any(canon.cap[demanded, g] <= 0.0)):
        return None
    need = float(need_units(canon, np.array([g], dtype=np.int64))[0])
    if need > upper:
        return None
    x = np.zeros(len(canon.keys), dtype=np.int64)
    x[g] = int(need)
    served = np.zeros_like(canon.cap)
    served[demanded, g] = canon.demand[demanded]
    return Fleet(x, served)


def _two_shared(canon: Canon, sel: Selection, j_a: int, j_b: int) -> Fleet | None:
    """Two options that both serve the whole mix: ``x[a]`` units carry the fraction
    ``x[a] / L[a]`` of it, so ``b`` needs ``ceil(L[b] * (1 - x[a] / L[a]))`` units."""
    g_a, g_b = int(sel.cols[j_a]), int(sel.cols[j_b])
    u_a, u_b = float(sel.upper[j_a]), float(sel.upper[j_b])
    load = load_units(canon, np.array([g_a, g_b], dtype=np.int64))
    x_a = np.arange(0.0, u_a + 1.0)
    left = np.maximum(0.0, 1.0 - x_a / float(load[0]))
    missing = float(canon.min_replicas) - x_a * float(canon.rpu[g_a])
    x_b = np.maximum(ceil_load(left * float(load[1])), units_for_replicas(missing, canon.rpu[g_b]))
    x_b, ok = _line_minimum(canon, g_a, g_b, x_a, x_b)
    return _best_pair(canon, g_a, g_b, x_a, x_b, ok & (x_b <= u_b))


def _line_minimum(
    canon: Canon, g_a: int, g_b: int, x_a: np.ndarray, x_b: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """C7: a used line has at least ``n[g]`` units. ``b`` is raised to its minimum where it is
    used (more units only carry more); counts of ``a`` below its minimum are ruled out."""
    n_a, n_b = float(canon.line_units[g_a]), float(canon.line_units[g_b])
    x_b = np.where(x_b > 0.0, np.maximum(x_b, n_b), 0.0)
    return x_b, (x_a == 0.0) | (x_a >= n_a)


def _best_pair(
    canon: Canon,
    g_a: int,
    g_b: int,
    x_a: np.ndarray,
    x_b: np.ndarray,
    ok: np.ndarray,
) -> Fleet | None:
    """The cheapest of the ``ok`` pairs ``(x_a, x_b)`` within the card cap (ties: cards, then
    fewer units of the option whose key sorts first), served as a shared mix."""
    i_a, i_b = int(canon.gpu_of[g_a]), int(canon.gpu_of[g_b])
    cards = x_a * float(canon.tp[g_a]) + x_b * float(canon.tp[g_b])
    if i_a == i_b and math.isfinite(canon.card_cap[i_a]):
        ok = ok & (cards <= canon.card_cap[i_a])
    if not bool(ok.any()):
        return None
    cost = x_a * canon.cost[g_a] + x_b * canon.cost[g_b]
    candidates = np.flatnonzero(ok)
    first = x_a if g_a < g_b else x_b
    best = candidates[np.lexsort((first[candidates], cards[candidates], cost[candidates]))[0]]
    x = np.zeros(len(canon.keys), dtype=np.int64)
    x[g_a] = int(x_a[best])
    x[g_b] = int(x_b[best])
    return Fleet(x, shared_served(canon, x))


def _two(canon: Canon, sel: Selection, j_a: int, j_b: int) -> Fleet | None:
    if canon.shared:
        return _two_shared(canon, sel, j_a, j_b)
    g_a, g_b = int(sel.cols[j_a]), int(sel.cols[j_b])
    u_a, u_b = float(sel.upper[j_a]), float(sel.upper[j_b])
    dem = np.flatnonzero(canon.demanded)
    demand = canon.demand[dem]
    cap_a, cap_b = canon.cap[dem, g_a], canon.cap[dem, g_b]
    if bool(np.any((cap_a <= 0.0) & (cap_b <= 0.0))):
        return None
    only_a = cap_b <= 0.0
    only_b = cap_a <= 0.0
    flex = np.flatnonzero(~only_a & ~only_b)
    forced_a = float(np.sum(demand[only_a] / cap_a[only_a]))  # units of a, at least
    forced_b = float(np.sum(demand[only_b] / cap_b[only_b]))
    # Flexible shapes in decreasing cap_a / cap_b (ties: bucket order).
    order = flex[np.lexsort((flex, -(cap_a[flex] / cap_b[flex])))]
    time_a = demand[order] / cap_a[order]  # units of a to carry the whole shape
    time_b = demand[order] / cap_b[order]  # units of b to carry the whole shape
    cum_a = np.concatenate(([0.0], np.cumsum(time_a)))
    left_b = float(np.sum(time_b)) - np.concatenate(([0.0], np.cumsum(time_b)))

    x_a = np.arange(0.0, u_a + 1.0)
    spare_a = np.clip(x_a - forced_a, 0.0, cum_a[-1])
    load_b = forced_b + np.interp(spare_a, cum_a, left_b)
    # C4: b hosts the replicas a does not, r[a] x[a] + r[b] x[b] >= m.
    missing = float(canon.min_replicas) - x_a * float(canon.rpu[g_a])
    x_b = np.maximum(ceil_load(load_b), units_for_replicas(missing, canon.rpu[g_b]))
    x_b, fits_lines = _line_minimum(canon, g_a, g_b, x_a, x_b)
    ok = fits_lines & (x_a >= float(ceil_load(np.array([forced_a]))[0])) & (x_b <= u_b)
    i_a, i_b = int(canon.gpu_of[g_a]), int(canon.gpu_of[g_b])
    cards = x_a * float(canon.tp[g_a]) + x_b * float(canon.tp[g_b])
    if i_a == i_b and math.isfinite(canon.card_cap[i_a]):
        ok &= cards <= canon.card_cap[i_a]
    if not bool(ok.any()):
        return None
    cost = x_a * canon.cost[g_a] + x_b * canon.cost[g_b]
    candidates = np.flatnonzero(ok)
    first = x_a if g_a < g_b else x_b  # ties: fewer units of the option whose key sorts first
    order_key = (first[candidates], cards[candidates], cost[candidates])
    best = candidates[np.lexsort(order_key)[0]]

    x = np.zeros(len(canon.keys), dtype=np.int64)
    x[g_a] = int(x_a[best])
    x[g_b] = int(x_b[best])
    served = np.zeros_like(canon.cap)
    served[dem[only_a], g_a] = demand[only_a]
    served[dem[only_b], g_b] = demand[only_b]
    spare = max(0.0, float(x_a[best]) - forced_a)
    for pos in order:
        on_a = min(float(demand[pos]), spare * float(cap_a[pos]))
        spare = max(0.0, spare - on_a / float(cap_a[pos]))
        served[dem[pos], g_a] = on_a
        served[dem[pos], g_b] = float(demand[pos]) - on_a
    return Fleet(x, served)
