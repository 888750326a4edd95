"""A first fleet for the cost MILP's bound: the cheapest fleet of two options around the best
options.

:func:`highs.solve_milp` passes HiGHS the objective of a fleet known to be feasible
(``known_value``), and HiGHS drops everything worse from the start. The closer that value lies
to the optimum, the sooner HiGHS holds the optimum and only has to prove it.

Optimal fleets of the plan's MILPs mostly have two lines: a workhorse option carrying most of
the load and a second one topping it up. For each of the :data:`ANCHORS` options with the
cheapest one-option fleets, every count of the anchor from its one-option count down by
:data:`BELOW` units is scored against every other option as the second line, in one
vectorised pass, by the two-option rule of :mod:`exact`: the anchor's unit-time goes to the
shapes in decreasing order of ``cap[s, a] / cap[s, b]`` (after the shapes only the anchor
serves), and the second option gets the fewest units that carry the rest and host the missing
replicas. About 0.4 ms per scope.

Replayed on the policy MILPs of 40 cold 4-bucket plans (``bench/policy_milp.py``): the
cheapest one-option fleet lies a median 9.6% above the optimum (p90 26.2%), the cheaper of it
and the two-option fleets 0.0% (p90 4.9%); HiGHS' time per MILP goes from a median 15.8 to
8.6 ms (mean 17.7 to 11.8 ms), where the optimum itself as the bound gives 6.8 ms (mean 7.3).

Feasible by construction, so the value is an upper bound on the optimum: demand (the split is
a valid routing), unit bounds (``sel.upper``, which hold the unit and card caps of each
option), the card cap of a GPU both lines share, ``min_replicas``, the line minimum and the
one-type rule. Spread and shared routing are left to the one-option bound (``None`` here).
Pure: arrays in, a number out.
"""

from __future__ import annotations

import numpy as np

from service.domain.solver.highs import MilpModel
from service.domain.solver.prune import (
    Canon,
    FloatArray,
    Selection,
    ceil_load,
    need_units,
    units_for_replicas,
)

# Options (by their one-option fleet's objective) tried as the workhorse line.
ANCHORS = 2
# Counts of the workhorse tried below its one-option count.
BELOW = 3
# Time a second line would need on a shape it cannot serve: never within its bound.
_NEVER = 1e30


def two_option_objective(canon: Canon, sel: Selection, model: MilpModel) -> float | None:
    """The objective ``model`` gives the cheapest two-option fleet found around the
    :data:`ANCHORS` best options (module docstring), ``None`` when there is none (or the scope
    has spread, shared routing, no demand or a single option)."""
    n = sel.size
    demanded = np.flatnonzero(canon.demanded)
    if canon.spread or canon.shared or n < 2 or demanded.size == 0:
        return None
    cols = sel.cols
    cap = canon.cap[np.ix_(demanded, cols)]
    demand = canon.demand[demanded]
    coef = model.c[:n]
    serves = cap > 0.0
    alone = np.where(
        np.all(serves, axis=0) & (need_units(canon, cols) <= sel.upper),
        coef * need_units(canon, cols),
        np.inf,
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        # units of each option that carry each whole shape (_NEVER where it cannot serve it)
        time = np.where(serves, demand[:, None] / np.where(serves, cap, 1.0), _NEVER)
    best = np.inf
    for a in np.argsort(alone, kind="stable")[:ANCHORS]:
        if np.isfinite(alone[a]):
            best = min(best, _with_anchor(canon, sel, coef, cap, time, int(a)))
    return float(best) if np.isfinite(best) else None


def _with_anchor(
    canon: Canon,
    sel: Selection,
    coef: FloatArray,
    cap: FloatArray,
    time: FloatArray,
    a: int,
) -> float:
    """The least objective of the pairs (anchor ``a``, any other option), ``inf`` if none."""
    cols = sel.cols
    rpu = canon.rpu[cols].astype(np.float64)
    line = canon.line_units[cols].astype(np.float64)
    gpu = canon.gpu_of[cols]
    top = min(float(sel.upper[a]), float(ceil_load(np.array([time[:, a].sum()]))[0]))
    counts = np.arange(max(0.0, top - BELOW), top + 1.0)
    counts = counts[(counts == 0.0) | (counts >= line[a])]
    if counts.size == 0:
        return float(np.inf)
    serves = cap > 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        # filler time saved per unit-time of the anchor; shapes only the anchor serves first
        saving = np.where(serves, cap[:, [a]] / np.where(serves, cap, 1.0), _NEVER)
    order = np.argsort(-saving, axis=0, kind="stable")
    anchor_time = time[:, a][order]
    filler_time = np.take_along_axis(time, order, axis=0)
    before = np.cumsum(anchor_time, axis=0) - anchor_time
    covered = np.clip((counts[:, None, None] - before[None]) / anchor_time[None], 0.0, 1.0)
    load = np.sum(filler_time[None] * (1.0 - covered), axis=1)  # (counts, options)
    missing = float(canon.min_replicas) - rpu[a] * counts[:, None]
    filler = np.maximum(ceil_load(load), units_for_replicas(missing, rpu[None, :]))
    filler = np.where(filler > 0.0, np.maximum(filler, line[None, :]), 0.0)
    ok = filler <= sel.upper[None, :]
    ok[:, a] = False
    same = gpu == gpu[a]
    if sel.single_type:
        ok &= same[None, :]
    tp = canon.tp[cols].astype(np.float64)
    cards = counts[:, None] * tp[a] + filler * tp[None, :]
    ok &= ~same[None, :] | (cards <= canon.card_cap[gpu[a]])
    objective = counts[:, None] * coef[a] + filler * coef[None, :]
    return float(np.min(np.where(ok, objective, np.inf)))
