"""Exact minimum-cost fleets of one GPU with three or four *replica types* (tensor-parallel
degrees), without branch and bound: the step :mod:`replica_types` leaves to the MILP when a
GPU keeps TP1, TP2, TP4 and TP8 replicas (a 70B model on a large-memory card, long and short
prompts in the mix).

Notation of :mod:`replica_types`: ``R[t]`` replicas of type ``t``, ``kappa[s, t]`` requests/s
one replica of ``t`` sustains on shape ``s`` alone (0: cannot), ``D[s]`` the rate to serve,
``F_t(R)`` the cheapest units hosting ``R`` replicas of ``t`` (line minimums included).

**Which replica counts carry the load.** Replicas ``R`` carry ``D`` iff some split ``z[s, t]
>= 0`` has ``sum_t z[s, t] = D[s]`` and ``sum_s z[s, t] / kappa[s, t] <= R[t]``. By LP duality
that holds iff ``q . R >= phi(q) = sum_s D[s] min_{t: kappa[s,t] > 0} q[t] / kappa[s, t]`` for
every ``q >= 0`` (prices of a replica's time). ``q . R - phi(q)`` is convex and piecewise linear
on the simplex ``sum q = 1``, linear on each cell where every shape's cheapest type is fixed,
so it is least at a vertex of a cell: a point of the simplex on ``K - 1`` independent
hyperplanes among ``q[t] kappa[s, u] = q[u] kappa[s, t]`` (two types tie on a shape) and
``q[t] = 0``. Every such point is enumerated (one small linear system each), and ``R`` carries
the load iff ``q_v . R >= phi(q_v)`` at each of them: ``V`` linear inequalities, evaluated on
many ``R`` at once. Points that are not cell vertices add valid inequalities and change nothing.

**Search.** The type with the longest ``F`` table is solved for last: for every combination of
the other types' counts (``0..reach``: more replicas of a type than it needs alone never pay),
its fewest replicas are the largest ``(phi(q_v) - q_v . R_other) / q_v[last]``, rounded up, and
``m - sum R_other``; the fleet is the combination cheapest in (cost units, cards), ties to the
fewest replicas of the types in key order. The split of the load between the types is one
linear program (HiGHS, no integers); within a type it follows the replicas of each option.

Left to the MILP: more than :data:`MAX_COMBINATIONS` combinations, more than
:data:`MAX_SYSTEMS` candidate vertices, or a split the LP cannot confirm (a count on the
boundary within rounding).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Sequence
from typing import Protocol

import numpy as np
from scipy import sparse

from service.domain.solver.highs import MilpModel, Outcome, solve_milp
from service.domain.solver.prune import LOAD_RTOL, FloatArray, IntArray, ceil_load

# Combinations of the other types' replica counts enumerated at most (else the MILP).
MAX_COMBINATIONS = 100_000
# Linear systems solved at most to find the cells' vertices (else the MILP).
MAX_SYSTEMS = 60_000
# A candidate vertex whose coordinates fall below -this is outside the simplex.
_SIMPLEX_TOL = 1e-12
# Systems whose determinant is below this (rows are unit vectors) have no single solution.
_SINGULAR = 1e-10
# Relative margin on the dual bounds of the search (rounding in the LP's duals).
_DUAL_RTOL = 1e-7
# Capacity matrices whose vertices are memoised (a few kB each).
_MEMO_SIZE = 512
# HiGHS time limit for the split LP (seconds): it is tiny; a hang is a bug, not a plan.
_SPLIT_TIME_LIMIT_S = 5.0


class CoverTable(Protocol):
    """``F_t`` tabulated for ``R = 0..len - 1`` (see :mod:`replica_types`)."""

    @property
    def cost(self) -> FloatArray: ...

    @property
    def cards(self) -> FloatArray: ...


def carrying_inequalities(kappa: FloatArray, demand: FloatArray) -> tuple[FloatArray, FloatArray]:
    """``(Q, phi)``: replicas ``R`` (one per column of ``kappa``, shapes in rows) carry
    ``demand`` iff ``Q @ R >= phi`` row by row (see module docstring); ``Q`` is empty when the
    enumeration would exceed :data:`MAX_SYSTEMS` (callers then use the MILP). ``Q`` depends
    on ``kappa`` alone and ``phi`` linearly on ``demand``, so the vertices are memoised per
    ``kappa`` (a curve re-solves one GPU at many loads, a plan's what-ifs at one)."""
    q, least = _vertices(kappa.shape, kappa.tobytes())
    phi: FloatArray = least @ demand
    return q, phi


@functools.lru_cache(maxsize=_MEMO_SIZE)
def _vertices(shape: tuple[int, ...], raw: bytes) -> tuple[FloatArray, FloatArray]:
    """``(Q, L)`` for the capacities ``raw`` (``kappa``'s bytes, of ``shape``): the points
    ``Q`` and, per point and shape, the least time price ``L[v, s] = min_t Q[v, t] /
    kappa[s, t]`` (``phi = L @ demand``).

    A point is kept only when each hyperplane that defines it is *active* there: a facet
    ``q[t] = 0``, or a tie between two types that both attain the minimum for that shape.
    A vertex of a cell is always defined by active hyperplanes, so nothing needed is lost."""
    kappa = np.frombuffer(raw, dtype=np.float64).reshape(shape)
    shapes, types = kappa.shape
    serves = kappa > 0.0
    per_request = 1.0 / np.where(serves, kappa, 1.0)
    planes: list[FloatArray] = [np.eye(types)[t] for t in range(types)]
    ties: list[tuple[int, int, int]] = []  # (shape, t, u) of each plane after the facets
    for s in range(shapes):
        for t, u in itertools.combinations(np.flatnonzero(serves[s]).tolist(), 2):
            h = np.zeros(types)
            h[t], h[u] = kappa[s, u], -kappa[s, t]
            planes.append(h / float(np.linalg.norm(h)))
            ties.append((s, t, u))
    unique, origin = np.unique(np.round(np.array(planes), 12), axis=0, return_inverse=True)
    origin = origin.reshape(-1)
    picks = np.array(list(itertools.combinations(range(len(unique)), types - 1)), dtype=np.int64)
    if picks.size == 0 or len(picks) > MAX_SYSTEMS:
        return np.zeros((0, types)), np.zeros((0, shapes))
    systems: FloatArray = np.concatenate(
        (unique[picks], np.broadcast_to(np.ones(types), (len(picks), 1, types))), axis=1
    ).astype(np.float64)
    regular = np.abs(np.linalg.det(systems)) > _SINGULAR
    picks = picks[regular]
    rhs = np.zeros(types)
    rhs[-1] = 1.0
    q = np.linalg.solve(systems[regular], np.broadcast_to(rhs[:, None], (len(picks), types, 1)))[
        :, :, 0
    ]
    inside = (q >= -_SIMPLEX_TOL).all(axis=1)
    q, picks = np.clip(q[inside], 0.0, None), picks[inside]
    q = q / q.sum(axis=1, keepdims=True)
    # Per point and shape: the time price of each type serving it, and the least of them.
    price = np.where(serves[None, :, :], q[:, None, :] * per_request[None, :, :], np.inf)
    least = price.min(axis=2)
    active = np.zeros((len(q), len(unique)), dtype=bool)
    for t in range(types):
        active[:, origin[t]] |= q[:, t] <= _SIMPLEX_TOL
    for j, (s, t, u) in enumerate(ties):
        top = least[:, s] * (1.0 + 1e-9) + 1e-15
        active[:, origin[types + j]] |= (price[:, s, t] <= top) & (price[:, s, u] <= top)
    vertex = active[np.arange(len(q))[:, None], picks].all(axis=1)
    q, least = q[vertex], least[vertex]
    q, keep = np.unique(np.round(q, 12), axis=0, return_index=True)
    # phi(q) = sum_s D[s] * min_t q[t] / kappa[s, t] over the types serving s.
    q.flags.writeable = False
    least = least[keep]
    least.flags.writeable = False
    return q, least


def many_type_replicas(
    kappa: Sequence[FloatArray], demand: FloatArray, m: float, tables: Sequence[CoverTable]
) -> tuple[bool, list[int] | None]:
    """``(handled, replicas)``: the replicas of each type in the cheapest fleet, ``None`` when
    no fleet within the tables carries the load; ``handled`` False: leave it to the MILP."""
    k = np.column_stack(kappa)
    if bool(np.any((k <= 0.0).all(axis=1))):
        return True, None  # a shape no type serves
    q, phi = carrying_inequalities(k, demand)
    if q.size == 0:
        return False, None
    sizes = np.array([t.cost.size for t in tables])
    order = [int(t) for t in np.argsort(sizes, kind="stable")]
    last = order.pop()  # the longest table is solved for, not enumerated
    rate = np.array([_per_replica(t) for t in tables])
    bound = _relaxation(q, phi, m, sizes, rate, tables)
    if bound is None:
        return True, None
    upper, dual = bound
    # Partial combinations of the types in ``order``: each type's count ranges only over what
    # the budget ``upper`` (a fleet known to carry the load) leaves (:func:`_count_range`),
    # and a partial combination is dropped when a lower bound on every completion costs more.
    fixed = np.zeros((1, 0), dtype=np.int64)
    spent = np.zeros(1)
    for depth, t in enumerate(order):
        done, rest = order[:depth], [*order[depth:], last]
        lo, hi = _count_range(q, phi, m, fixed, spent, done, rest, upper, tables, rate, dual)
        width = np.maximum(hi - lo + 1, 0)
        total = int(width.sum())
        if total > MAX_COMBINATIONS:
            return False, None
        parent = np.repeat(np.arange(len(fixed)), width)
        start = np.cumsum(width) - width
        counts = lo[parent] + (np.arange(total) - start[parent])
        fixed = np.column_stack((fixed[parent], counts))
        spent = spent[parent] + tables[t].cost[counts]
        floor = _rest_floor(q, phi, m, fixed, order[: depth + 1], rest[1:], rate, dual)
        keep = spent + floor <= upper
        fixed, spent = fixed[keep], spent[keep]
        if fixed.shape[0] == 0:
            return True, None
    grid = fixed.astype(np.float64)
    short = phi[None, :] - grid @ q[:, order].T  # what the last type must still carry
    slack = LOAD_RTOL * np.maximum(1.0, np.abs(phi))[None, :]
    on_last = q[:, last] > _SIMPLEX_TOL
    ok = (short[:, ~on_last] <= slack[:, ~on_last]).all(axis=1)
    need = (
        np.max(short[:, on_last] / q[None, on_last, last], axis=1)
        if bool(on_last.any())
        else np.zeros(len(grid))
    )
    r_last = np.maximum(ceil_load(need), np.maximum(m - grid.sum(axis=1), 0.0))
    ok &= r_last < sizes[last]
    if not bool(ok.any()):
        return True, None
    rows = np.flatnonzero(ok)
    chosen = np.zeros((rows.size, len(tables)), dtype=np.int64)
    chosen[:, order] = fixed[rows]
    chosen[:, last] = r_last[rows].astype(np.int64)
    cost = np.sum([tables[t].cost[chosen[:, t]] for t in range(len(tables))], axis=0)
    cards = np.sum([tables[t].cards[chosen[:, t]] for t in range(len(tables))], axis=0)
    keys = [chosen[:, t] for t in reversed(range(len(tables)))]
    best = int(np.lexsort((*keys, cards, cost))[0])
    return True, [int(r) for r in chosen[best]]


def _count_range(
    q: FloatArray,
    phi: FloatArray,
    m: float,
    fixed: IntArray,
    spent: FloatArray,
    done: list[int],
    rest: list[int],
    upper: float,
    tables: Sequence[CoverTable],
    rate: FloatArray,
    dual: FloatArray,
) -> tuple[IntArray, IntArray]:
    """Per partial combination (rows of ``fixed``: counts of the types ``done``), the counts
    ``lo..hi`` of the next type ``t = rest[0]`` worth trying:

    * at most what the budget left (``upper - spent``) buys of it, and at least what the
      load and ``m`` still need with every other type in ``rest`` at the most the budget left
      buys of it (``F`` never falls as ``R`` grows, and ``Q >= 0``);
    * by the relaxation's dual ``y = (y_Q, y_m)``: the types after ``t`` cost at least
      ``y_Q . (short - q_t R_t) + y_m (missing - R_t)`` (``short``, ``missing``: the load and
      replicas left after ``done``), and ``t`` at least ``rate_t R_t``, so within the budget
      ``(y_Q . q_t + y_m) R_t >= spent + y_Q . short + y_m missing - upper`` and ``(rate_t -
      y_Q . q_t - y_m) R_t <= upper - spent - y_Q . short - y_m missing``."""
    left = upper - spent
    most = np.stack(
        [
            np.minimum(
                np.searchsorted(tables[u].cost, left, side="right") - 1, tables[u].cost.size - 1
            )
            for u in rest
        ],
        axis=1,
    )  # per row and type of ``rest``: the most replicas the budget left buys (-1: none)
    t, others = rest[0], rest[1:]
    short = phi[None, :] - fixed.astype(np.float64) @ q[:, done].T
    if others:
        short = short - np.maximum(most[:, 1:], 0).astype(np.float64) @ q[:, others].T
    slack = LOAD_RTOL * np.maximum(1.0, np.abs(phi))[None, :]
    covers = q[:, t] > _SIMPLEX_TOL
    lo = np.zeros(len(fixed))
    if bool(covers.any()):
        lo = np.max(ceil_load(short[:, covers] / q[None, covers, t]), axis=1)
    unreachable = (short[:, ~covers] > slack[:, ~covers]).any(axis=1)
    missing = m - fixed.sum(axis=1) - np.maximum(most[:, 1:], 0).sum(axis=1)
    lo = np.maximum(lo, np.maximum(missing, 0.0))
    hi = np.where(unreachable, -1, most[:, 0]).astype(np.float64)
    # The dual bounds (a relative margin keeps them safe from rounding).
    y_q, y_m = dual[:-1], float(dual[-1])
    left_load = phi[None, :] - fixed.astype(np.float64) @ q[:, done].T
    owed = left_load @ y_q + y_m * (m - fixed.sum(axis=1)) + spent - upper
    margin = _DUAL_RTOL * (np.abs(upper) + np.abs(spent) + 1.0)
    per_count = float(y_q @ q[:, t]) + y_m
    if per_count > 0.0:
        lo = np.maximum(lo, np.ceil((owed - margin) / per_count))
    reduced = float(rate[t]) - per_count
    if reduced > _DUAL_RTOL * max(1.0, float(rate[t])):
        hi = np.minimum(hi, np.floor((margin - owed) / reduced))
    return lo.astype(np.int64), hi.astype(np.int64)


def _per_replica(table: CoverTable) -> float:
    """The least cost per replica of a type: ``F_t(R) >= rate * R`` for every ``R``."""
    if table.cost.size < 2:
        return 0.0
    return float(np.min(table.cost[1:] / np.arange(1, table.cost.size)))


def _relaxation(
    q: FloatArray,
    phi: FloatArray,
    m: float,
    sizes: IntArray,
    rate: FloatArray,
    tables: Sequence[CoverTable],
) -> tuple[float, FloatArray] | None:
    """The LP relaxation over replicas priced at ``rate`` (``Q R >= phi``, ``sum R >= m``,
    ``R`` within the tables): ``(upper, dual)``, the cost of its solution rounded up (``Q >=
    0``: more replicas carry more; a little above, so that ties with the cheapest fleet stay)
    and dual values ``y >= 0`` of its rows with ``y . [Q; 1][:, t] <= rate[t]`` for every
    type (zeros when HiGHS gives none); ``None`` when not even the relaxation is feasible."""
    types = len(tables)
    a = np.vstack((q, np.ones((1, types))))
    model = MilpModel(
        c=rate.astype(np.float64),
        a=sparse.csc_array(a),
        row_lower=np.concatenate((phi, [m])),
        row_upper=np.full(len(phi) + 1, np.inf),
        col_lower=np.zeros(types),
        col_upper=(sizes - 1).astype(np.float64),
        integrality=np.zeros(types, dtype=np.uint8),
    )
    result = solve_milp(model, time_limit_s=_SPLIT_TIME_LIMIT_S)
    if result.outcome is not Outcome.OPTIMAL or result.x is None:
        return None
    rounded = np.minimum(np.ceil(np.asarray(result.x) - 1e-9), sizes - 1).astype(np.int64)
    cost = sum(float(tables[t].cost[rounded[t]]) for t in range(types))
    dual = np.zeros(a.shape[0])
    if result.row_dual is not None and result.row_dual.size == a.shape[0]:
        dual = np.maximum(result.row_dual, 0.0)
        used = dual @ a  # per type: what the dual charges one replica
        over = used > rate
        if bool(over.any()):  # rounding: scale into dual feasibility
            dual = dual * float(np.min(np.where(over, rate / np.where(over, used, 1.0), 1.0)))
    return cost * (1.0 + 1e-9) + 1e-6, dual


def _rest_floor(
    q: FloatArray,
    phi: FloatArray,
    m: float,
    fixed: IntArray,
    done: list[int],
    rest: list[int],
    rate: FloatArray,
    dual: FloatArray,
) -> FloatArray:
    """Per partial combination (rows of ``fixed``, the counts of the types ``done``), a lower
    bound on what the types ``rest`` must still cost: each inequality ``q_v . R >= phi_v`` alone
    (the load left, on the type cheapest for it), the replicas ``m`` still missing at the
    cheapest ``rate``, and the relaxation's ``dual`` applied to what is left (``y`` is dual
    feasible, so ``sum_rest rate_t R_t >= y . (left of every row)``). ``inf`` where no
    completion carries the load."""
    short = np.maximum(phi[None, :] - fixed.astype(np.float64) @ q[:, done].T, 0.0)
    covers = q[:, rest] > _SIMPLEX_TOL
    price = np.where(covers, rate[rest][None, :] / np.where(covers, q[:, rest], 1.0), np.inf)
    cheapest = price.min(axis=1)  # per inequality: cost per unit of it the rest can cover
    slack = LOAD_RTOL * np.maximum(1.0, np.abs(phi))[None, :]
    with np.errstate(invalid="ignore"):  # 0 * inf where nothing is short: masked out
        by_load = np.where(short > slack, short * cheapest[None, :], 0.0).max(axis=1)
    missing = np.maximum(m - fixed.sum(axis=1), 0.0)
    by_dual = short @ dual[:-1] + missing * dual[-1]
    out: FloatArray = np.maximum(np.maximum(by_load, missing * float(rate[rest].min())), by_dual)
    return out


def split_between_types(
    kappa: Sequence[FloatArray], demand: FloatArray, replicas: Sequence[int]
) -> FloatArray | None:
    """Requests/s of each shape (rows) on each type (columns) that ``replicas`` carry: a
    feasible split from one LP, or ``None`` when HiGHS finds none (a count on the boundary
    within rounding)."""
    k = np.column_stack(kappa)
    shapes, types = k.shape
    cells = np.argwhere(k > 0.0)  # (s, t) pairs a variable z[s, t] exists for
    n = len(cells)
    a = np.zeros((shapes + types, n))
    a[cells[:, 0], np.arange(n)] = 1.0  # sum_t z[s, t] = D[s]
    a[shapes + cells[:, 1], np.arange(n)] = 1.0 / k[cells[:, 0], cells[:, 1]]
    lower = np.concatenate((demand, np.full(types, -np.inf)))
    upper = np.concatenate((demand, np.asarray(replicas, dtype=np.float64)))
    model = MilpModel(
        c=np.zeros(n),
        a=sparse.csc_array(a),
        row_lower=lower,
        row_upper=upper,
        col_lower=np.zeros(n),
        col_upper=np.full(n, np.inf),
        integrality=np.zeros(n, dtype=np.uint8),
    )
    result = solve_milp(model, time_limit_s=_SPLIT_TIME_LIMIT_S)
    if result.outcome is not Outcome.OPTIMAL or result.x is None:
        return None
    out = np.zeros((shapes, types))
    out[cells[:, 0], cells[:, 1]] = np.clip(result.x, 0.0, None)
    return out
