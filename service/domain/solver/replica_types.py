"""Exact minimum-cost fleets of one GPU without HiGHS, when its options are at most two
*replica types* sold in several instance sizes.

A single-GPU scope (the planner's "alternatives") often keeps more than the two options
:mod:`exact` handles: one replica (a tensor-parallel degree) sold as 1-, 2-, 4- and 8-card
instances, beside a larger degree for long prompts. Units of options whose capacities are
proportional to their replicas per unit (``cap[:, g] = r[g] * kappa_t``, the same replica
``t`` in another instance size) differ only in granularity and price, so the load only sees
``R[t]``, the replicas of each type (:mod:`formulation` notation; counts of units are ``x``):

* ``F_t(R)``: the cheapest units of type ``t``'s options hosting at least ``R`` replicas,
  lexicographically (cost units, then cards), every option used holding at least its line
  minimum ``n[g]`` units (C7): a covering knapsack, solved by dynamic programming over the
  options and ``R = 0..R_max`` (ties: the option whose key sorts first);
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
holds more than ``max(n[g], ceil(R / r[g]))`` units of ``g``). A line minimum is a property
of each option, so it stays inside ``F_t`` and the split between types is unchanged. The
load of each type is split between its options in proportion to their replicas. Scopes with
caps (``max_units`` or a card cap), more than two replica types, more than
:data:`MAX_REPLICAS` replicas of a type, spread over providers or regions or shared routing
are left to the MILP.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from service.domain.solver.many_types import many_type_replicas, split_between_types
from service.domain.solver.prune import Canon, Fleet, IntArray, Selection, ceil_load

# Replicas of one type up to which the covering knapsack is tabulated (else the MILP).
MAX_REPLICAS = 2_000
# Replicas a cover table is tabulated for at least; option sets whose tables are memoised.
_MIN_TABULATED = 16
_MEMO_SIZE = 256
# Replica types of one GPU solved without HiGHS' branch and bound (three or more:
# :mod:`many_types`).
MAX_TYPES = 4
# Relative tolerance for "the same replica": capacities per replica equal to rounding.
_SAME_REPLICA_RTOL = 1e-12


def replica_type_fleet(canon: Canon, sel: Selection) -> tuple[bool, Fleet | None]:
    """``(handled, fleet)`` for a one-GPU scope (see module docstring); ``handled`` is False
    when the scope is not of that form (use the MILP), ``fleet`` ``None`` when infeasible."""
    cols = sel.cols
    if cols.size == 0 or np.unique(canon.gpu_of[cols]).size != 1 or sel.type_rows:
        return False, None
    if canon.spread or canon.shared:
        return False, None  # spread and shared routing: the MILP
    if np.isfinite(canon.max_units[cols]).any() or math.isfinite(
        float(canon.card_cap[int(canon.gpu_of[cols[0]])])
    ):
        return False, None
    groups = _groups(canon, cols)
    if groups is None or len(groups) > MAX_TYPES:
        return False, None
    demanded = canon.demanded
    kappa = [canon.cap[demanded][:, cols[g[0]]] / float(canon.rpu[cols[g[0]]]) for g in groups]
    demand = canon.demand[demanded]
    m = float(canon.min_replicas)
    reach = [_replicas_alone(demand, k, m) for k in kappa]
    if max(reach) > MAX_REPLICAS:
        return False, None
    tables = [_cover(canon, cols[g], int(r)) for g, r in zip(groups, reach, strict=True)]
    by_type: np.ndarray | None = None
    if len(groups) == 1:
        if bool(np.any(kappa[0] <= 0.0)):
            return True, None
        replicas = [int(reach[0])]
    elif len(groups) == 2:
        found = _two_types(kappa, demand, m, tables)
        if found is None:
            return True, None
        replicas = found
    else:
        handled, many = many_type_replicas(kappa, demand, m, tables)
        if not handled or many is None:
            return handled, None
        replicas = many
        by_type = split_between_types(kappa, demand, replicas)
        if by_type is None:
            return False, None  # on the boundary within rounding: the MILP decides
    x = np.zeros(len(canon.keys), dtype=np.int64)
    for g, table, r in zip(groups, tables, replicas, strict=True):
        x[cols[g]] = table.counts(r)
    if by_type is None:
        by_type = _two_type_split(kappa, demand, replicas)
    return True, Fleet(x, _served(canon, cols, groups, by_type, x))


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
    options hosting at least ``R`` replicas, each used option holding at least its line
    minimum; :meth:`counts` walks the choices back."""

    def __init__(
        self,
        cost: list[float] | np.ndarray,
        cards: list[float] | np.ndarray,
        choices: list[tuple[list[bool], list[bool]]],
        sizes: list[int],
        minimum: list[int],
    ):
        self.cost = np.array(cost)
        self.cards = np.array(cards)
        self.cost.flags.writeable = False
        self.cards.flags.writeable = False
        self._choices = choices
        self._sizes = sizes
        self._minimum = minimum

    def cut(self, r_max: int) -> _Cover:
        """The same table for ``R = 0..r_max`` only (``r_max`` within this one's)."""
        return _Cover(
            self.cost[: r_max + 1],
            self.cards[: r_max + 1],
            self._choices,
            self._sizes,
            self._minimum,
        )

    def counts(self, replicas: int) -> IntArray:
        out = np.zeros(len(self._sizes), dtype=np.int64)
        r, j, used = replicas, len(self._sizes) - 1, False
        while r > 0:
            skip, first = self._choices[j]
            if not used and skip[r]:
                j -= 1
            elif first[r]:
                out[j] += self._minimum[j]
                r = max(0, r - self._minimum[j] * self._sizes[j])
                j, used = j - 1, False
            else:
                out[j] += 1
                r, used = max(0, r - self._sizes[j]), True
        return out


def _cover(canon: Canon, cols: IntArray, r_max: int) -> _Cover:
    """The covering knapsack ``F_t`` for ``R = 0..r_max`` over the options ``cols`` (one
    replica type), each used option holding at least ``n[g]`` units (its line minimum, 1
    without one), option by option in key order: with ``F_j`` over the first ``j`` options
    and ``G_j`` the same with option ``j`` used,

    ``G_j(R) = min(F_{j-1}(R - n[j] r[j]) + n[j] (cost, cards)[j], G_j(R - r[j]) + (cost,
    cards)[j])`` and ``F_j(R) = min(F_{j-1}(R), G_j(R))`` (``R - ...`` floored at 0; ties keep
    the earlier option, then its line minimum alone).

    ``F`` up to ``R`` does not depend on how far it is tabulated, so tables are memoised per
    option set, tabulated to the next power of two (a plan's what-ifs and a curve's load
    points ask for the same GPU again and again), and cut to ``r_max``."""
    whole = _cover_table(
        tuple(canon.cost[cols].tolist()),
        tuple(canon.tp[cols].tolist()),
        tuple(int(r) for r in canon.rpu[cols]),
        tuple(max(1, int(n)) for n in canon.line_units[cols]),
        max(_MIN_TABULATED, 1 << max(0, r_max - 1).bit_length()),
    )
    return whole.cut(r_max)


@functools.lru_cache(maxsize=_MEMO_SIZE)
def _cover_table(
    costs: tuple[float, ...],
    cards: tuple[float, ...],
    sizes: tuple[int, ...],
    minimum: tuple[int, ...],
    r_max: int,
) -> _Cover:
    """:func:`_cover` for one option set (cost units, cards, replicas and line minimum in
    units per option, in key order), tabulated for ``R = 0..r_max``."""
    f_cost = [0.0] + [math.inf] * r_max
    f_cards = [0.0] + [math.inf] * r_max
    choices: list[tuple[list[bool], list[bool]]] = []
    for c, k, size, n in zip(costs, cards, sizes, minimum, strict=True):
        g_cost = [math.inf] * (r_max + 1)
        g_cards = [math.inf] * (r_max + 1)
        p_cost, p_cards = f_cost[:], f_cards[:]  # F_{j-1}
        skip = [True] * (r_max + 1)
        first = [True] * (r_max + 1)
        for r in range(1, r_max + 1):
            prev = max(0, r - n * size)
            best_c, best_k = p_cost[prev] + n * c, p_cards[prev] + n * k
            more = max(0, r - size)
            more_c, more_k = g_cost[more] + c, g_cards[more] + k
            if more_c < best_c or (more_c == best_c and more_k < best_k):
                best_c, best_k, first[r] = more_c, more_k, False
            g_cost[r], g_cards[r] = best_c, best_k
            if best_c < f_cost[r] or (best_c == f_cost[r] and best_k < f_cards[r]):
                f_cost[r], f_cards[r], skip[r] = best_c, best_k, False
        choices.append((skip, first))
    return _Cover(f_cost, f_cards, choices, list(sizes), list(minimum))


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


def _two_type_split(kappa: list[np.ndarray], demand: np.ndarray, replicas: list[int]) -> np.ndarray:
    """Requests/s of each shape (rows) on each of one or two types (columns), as
    :func:`_two_types` assigns them: ``a`` takes the shapes only it serves, then the others
    in decreasing ``kappa_a / kappa_b`` while its replicas last."""
    if len(kappa) == 1:
        return demand[:, None].copy()
    by_type = np.zeros((demand.size, 2))
    k_a, k_b = kappa
    only_a, only_b = k_b <= 0.0, k_a <= 0.0
    by_type[only_a, 0] = demand[only_a]
    by_type[only_b, 1] = demand[only_b]
    flex = np.flatnonzero(~only_a & ~only_b)
    spare = max(0.0, replicas[0] - float(np.sum(demand[only_a] / k_a[only_a])))
    for pos in flex[np.lexsort((flex, -(k_a[flex] / k_b[flex])))]:
        on_a = min(float(demand[pos]), spare * float(k_a[pos]))
        spare = max(0.0, spare - on_a / float(k_a[pos]))
        by_type[pos, 0] = on_a
        by_type[pos, 1] = float(demand[pos]) - on_a
    return by_type


def _served(
    canon: Canon, cols: IntArray, groups: list[IntArray], by_type: np.ndarray, x: IntArray
) -> np.ndarray:
    """Requests/s of each shape on each option: ``by_type`` (shapes x types) split within a
    type in proportion to the replicas of each option."""
    dem = np.flatnonzero(canon.demanded)
    served = np.zeros_like(canon.cap)
    for t, group in enumerate(groups):
        hosted = x[cols[group]] * canon.rpu[cols[group]]
        total = float(np.sum(hosted))
        if total <= 0.0:
            continue
        for j, n in zip(group, hosted, strict=True):
            served[dem, cols[j]] = by_type[:, t] * (float(n) / total)
    return served
