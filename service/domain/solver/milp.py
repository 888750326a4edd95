"""Fleet MILP: the cheapest mix of billed units that serves every request shape under the SLO.

A *unit* of an option is what is bought and billed whole (one replica on its cards, or a cloud
instance of ``n`` cards hosting ``r = n // t`` replicas of tensor-parallel degree ``t``); a
*replica* is one model instance. The variables count units; only C4 counts replicas.

Notation (indices: ``s`` bucket, ``g`` option, ``i`` GPU id; ``gpu(g)`` is option g's GPU)::

    d[s]     demand of bucket s, requests/s, before headroom (Bucket.demand_qps)
    D[s]     d[s] * (1 + headroom): the rate to serve, requests/s
    cap[s,g] requests/s ONE unit of g (all its replicas) sustains on shape s alone within the
             SLO (0: cannot)
    c[g]     USD/hour per unit of g (FleetOption.usd_per_hour > 0)
    tp[g]    cards per unit of g (FleetOption.tensor_parallel)
    r[g]     model replicas per unit of g (FleetOption.replicas_per_unit >= 1)
    u[g]     unit cap of offer g (FleetOption.max_units, in units; inf if none)
    K[i]     card cap of GPU i (max_cards, inf if none)
    m        min_replicas (model replicas);  B  budget, USD/hour

Variables::

    x[g]   in Z>=0   units of option g
    z[s,g] >= 0      requests/s of bucket s served by g (only where cap[s,g] > 0)
    y[i]   in {0,1}  GPU i is the one type (only when allow_mix is False and >1 GPU remains)

Objective (USD/hour)::

    minimise  sum_g c[g] * x[g]

Constraints (labelled the same way in the code)::

    C1 demand       sum_g z[s,g] = D[s]                         for every s with D[s] > 0
    C2 capacity     sum_s z[s,g] / cap[s,g] <= x[g]             for every g  (units; a
                    unit time-shares between shapes, Melange-style)
    C3 availability sum_{g: gpu(g)=i} tp[g] * x[g] <= K[i]      for every capped i  (cards)
                    x[g] <= u[g]                                for every capped g  (units)
    C4 redundancy   sum_g r[g] * x[g] >= m                      (model replicas)
    C5 single type  sum_i y[i] = 1;  x[g] <= U[g] * y[gpu(g)]   when allow_mix is False
    C6 budget       sum_g c[g] * x[g] <= B                      (only in the load-scaling solve)

Numerics: C1 rows are divided by D[s] (dimensionless fractions). With a single demanded
shape, C1 and C2 are passed in their aggregate, pure-integer form ``sum_g cap[s,g] x[g] >= D[s]``
(the same feasible fleets; HiGHS solves it 2-4x faster) and the load is split over the
units in proportion to capacity. Costs are exact integers in
*cost units* of 10**-k USD/hour (:func:`prune.quantise_costs`; k <= 6, almost always the
number of decimals prices are quoted with), so two fleets' costs are equal or at least one cost
unit apart.

Big-U (C5) is also the variable bound ``x[g] <= U[g]``, valid because it only removes
non-optimal fleets: ``U[g] = min(u[g], floor(K[gpu(g)] / tp[g]), max(ceil(m / r[g]),
ceil(L[g])))`` with ``L[g] = sum_s D[s] / cap[s,g]`` over the shapes g can serve: more units of
g than needed to carry all the load g could carry alone and to host m replicas alone can be
removed at a strictly lower cost (g alone still carries its load and hosts
``r[g] * ceil(m / r[g]) >= m`` replicas). In the load-scaling solve,
``U[g] = min(u[g], floor(K / tp[g]), floor(B / c[g]))``.

Optimality and ties. Every solve asks HiGHS for a relative MIP gap of 0 (its absolute gap 1e-6 is
below one cost unit, and HiGHS detects the integral objective), under ``time_limit_s``. Among
equal-cost fleets the one with the fewest cards (``sum_g tp[g] x[g]``; model replicas play no
part) wins, lexicographically: the objective passed to
HiGHS is ``sum_g (W * c[g] + tp[g]) * x[g]`` in cost units, with ``W`` larger than the cards of
any cheapest fleet (``W = 1 + min(sum_g tp[g] U[g], UB / min_g(c[g] / tp[g]))``, ``UB`` the
cost of some feasible fleet). Costs being integers, two fleets' costs differ by 0 or by at least
one cost unit, worth ``W`` > any cheapest fleet's cards, so the tie-break can never make the fleet
dearer ("scaled below the smallest cost difference"). When ``UB * W`` exceeds 1e10 (floating
point would blur single cards), the same order comes from two stages instead: minimise cost,
then minimise cards subject to ``cost <= cost*``; stage 2 is discarded if it returns anything
dearer or with more cards (solver tolerance). Fleets equal in cost and cards are told apart by
determinism alone: buckets and options are sorted by key before the model is built and HiGHS is
deterministic, so the same problem, in any input order, yields the same bytes.

Before building, dominated options are removed (:func:`prune.dominated`: dropping them
never changes the optimal cost or card count), and a scope left with one or two options (per GPU
when one type is required) is solved exactly without HiGHS (:mod:`exact`).

Load-scaling solve (``max_qps_within_budget``): maximise ``lam >= 0`` subject to C1 with
``D[s] * lam`` on the right, C2-C5 and C6. The reported figure is ``lam * sum_s d[s]``: total
offered requests/s BEFORE headroom (the fleet serves it with the configured headroom), with the
same shape mix as the demand, rounded down by one part per million to absorb solver tolerance.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
from scipy import sparse

from service.domain.errors import InvalidInput
from service.domain.solver import diagnose
from service.domain.solver.exact import exact_fleet
from service.domain.solver.highs import MilpModel, MilpResult, Outcome, solve_milp
from service.domain.solver.problem import (
    FleetProblem,
    FleetSolution,
    Reason,
    ReasonCode,
    SolveStatus,
)
from service.domain.solver.prune import (
    Canon,
    Fleet,
    FloatArray,
    IntArray,
    Mode,
    Selection,
    canonicalize,
    load_units,
    need_units,
    select,
)

# Reported load-within-budget is rounded down by this fraction (solver feasibility tolerance).
SCALE_SAFETY = 1e-6
# Largest one-stage objective near the optimum (W times a feasible fleet's cost units).
ONE_STAGE_MAX_OBJECTIVE = 1e10
# Served rates below this fraction of their bucket's demand are solver noise and dropped.
_SERVED_RTOL = 1e-9


@dataclass(frozen=True, slots=True)
class _Layout:
    """Column map of one model: x first, then z pairs, then y, then extra columns."""

    sel: Selection
    pair_s: IntArray  # bucket index (canon) of each z column
    pair_j: IntArray  # selection index of each z column
    y_gpus: IntArray  # canon GPU index of each y column
    extra: int  # columns after y (lambda, or slacks)

    @property
    def n_x(self) -> int:
        return self.sel.size

    @property
    def z0(self) -> int:
        return self.n_x

    @property
    def y0(self) -> int:
        return self.n_x + int(self.pair_s.size)

    @property
    def e0(self) -> int:
        return self.y0 + int(self.y_gpus.size)

    @property
    def n_cols(self) -> int:
        return self.e0 + self.extra


class _Rows:
    """Accumulates constraint rows as COO triplets."""

    def __init__(self) -> None:
        self.rows: list[IntArray] = []
        self.cols: list[IntArray] = []
        self.vals: list[FloatArray] = []
        self.lower: list[float] = []
        self.upper: list[float] = []

    def add(self, cols: IntArray, vals: FloatArray, lower: float, upper: float) -> int:
        row = len(self.lower)
        self.rows.append(np.full(cols.size, row, dtype=np.int64))
        self.cols.append(cols.astype(np.int64))
        self.vals.append(vals.astype(np.float64))
        self.lower.append(lower)
        self.upper.append(upper)
        return row

    def add_block(
        self,
        row_idx: IntArray,
        cols: IntArray,
        vals: FloatArray,
        lower: FloatArray,
        upper: FloatArray,
    ) -> None:
        """Rows ``len..len+n-1``: ``row_idx`` is relative to the block."""
        base = len(self.lower)
        self.rows.append(row_idx.astype(np.int64) + base)
        self.cols.append(cols.astype(np.int64))
        self.vals.append(vals.astype(np.float64))
        self.lower.extend(lower.tolist())
        self.upper.extend(upper.tolist())

    def matrix(self, n_cols: int) -> tuple[sparse.csc_array, FloatArray, FloatArray]:
        n_rows = len(self.lower)
        if self.rows:
            rows = np.concatenate(self.rows)
            cols = np.concatenate(self.cols)
            vals = np.concatenate(self.vals)
        else:
            rows = cols = np.zeros(0, dtype=np.int64)
            vals = np.zeros(0, dtype=np.float64)
        a = sparse.csc_array((vals, (rows, cols)), shape=(n_rows, n_cols))
        a.sum_duplicates()
        a.sort_indices()
        return a, np.array(self.lower, dtype=np.float64), np.array(self.upper, dtype=np.float64)


def _layout(canon: Canon, sel: Selection, extra: int = 0) -> _Layout:
    demanded = canon.demanded
    cap = canon.cap[:, sel.cols]
    servable = (cap > 0.0) & demanded[:, None]
    if int(demanded.sum()) == 1:
        servable[:] = False  # one shape: no z columns, C1 + C2 aggregate (see _core_rows)
    pair_s, pair_j = np.nonzero(servable)  # row-major: sorted by bucket, then option
    y_gpus = (
        np.unique(canon.gpu_of[sel.cols]).astype(np.int64)
        if sel.single_type
        else np.zeros(0, np.int64)
    )
    return _Layout(sel, pair_s.astype(np.int64), pair_j.astype(np.int64), y_gpus, extra)


def _core_rows(canon: Canon, lay: _Layout, *, scale_col: int | None, soft_caps: bool) -> _Rows:
    """C1-C5 over the layout. ``scale_col``: the lambda column (C1 becomes ``= D * lam``).
    ``soft_caps``: C3 rows get slack columns (elastic diagnosis) starting at ``lay.e0``."""
    sel = lay.sel
    rows = _Rows()
    n_x = lay.n_x
    z_cols = np.arange(lay.z0, lay.y0, dtype=np.int64)
    demand = canon.demand

    demanded = np.flatnonzero(canon.demanded)
    if demanded.size == 1:
        # C1 + C2 with one shape: z[s,g] = cap[s,g] * (time share) fits iff
        # sum_g cap[s,g] x[g] >= D[s] (or >= D[s] lam); divided by D[s]. Pure integer row.
        only = int(demanded[0])
        vals = canon.cap[only, sel.cols] / demand[only]
        if scale_col is None:
            rows.add(np.arange(n_x), vals, 1.0, np.inf)
        else:
            rows.add(np.append(np.arange(n_x), scale_col), np.append(vals, -1.0), 0.0, np.inf)
        demanded = demanded[:0]

    # C1 demand: sum_g z[s,g] / D[s] = 1  (or - lam = 0)
    for s in demanded:
        mine = lay.pair_s == s
        cols = z_cols[mine]
        vals = np.full(cols.size, 1.0 / demand[s])
        if scale_col is None:
            rows.add(cols, vals, 1.0, 1.0)
        else:
            rows.add(np.append(cols, scale_col), np.append(vals, -1.0), 0.0, 0.0)

    # C2 capacity: sum_s z[s,g] / cap[s,g] - x[g] <= 0
    cap_pairs = canon.cap[lay.pair_s, sel.cols[lay.pair_j]]
    if demanded.size:
        rows.add_block(
            np.concatenate([lay.pair_j, np.arange(n_x)]),
            np.concatenate([z_cols, np.arange(n_x)]),
            np.concatenate([1.0 / cap_pairs, -np.ones(n_x)]),
            np.full(n_x, -np.inf),
            np.zeros(n_x),
        )

    # C3 availability: cards per GPU, sum tp[g] x[g] <= K[i] (unit caps u[g] are bounds);
    # elastic: every cap gets a slack column, x[g] - f[g] <= u[g] for unit caps.
    for k, cap_row in enumerate(_cap_rows(canon, sel, include_unit_caps=soft_caps)):
        cols, vals = cap_row.cols, cap_row.coef
        if soft_caps:
            cols = np.append(cols, lay.e0 + k)
            vals = np.append(vals, -1.0)
        rows.add(cols, vals, -np.inf, cap_row.limit)

    # C4 redundancy: sum_g r[g] x[g] >= m  (model replicas; x counts units)
    if canon.min_replicas > 0:
        rows.add(
            np.arange(n_x),
            canon.rpu[sel.cols].astype(np.float64),
            float(canon.min_replicas),
            np.inf,
        )

    # C5 single type: x[g] - U[g] y[gpu(g)] <= 0;  sum_i y[i] = 1
    if lay.y_gpus.size:
        gpu_sel = canon.gpu_of[sel.cols]
        y_of = np.searchsorted(lay.y_gpus, gpu_sel) + lay.y0
        rows.add_block(
            np.concatenate([np.arange(n_x), np.arange(n_x)]),
            np.concatenate([np.arange(n_x), y_of]),
            np.concatenate([np.ones(n_x), -sel.upper]),
            np.full(n_x, -np.inf),
            np.zeros(n_x),
        )
        rows.add(np.arange(lay.y0, lay.e0, dtype=np.int64), np.ones(lay.y_gpus.size), 1.0, 1.0)
    return rows


def _bounds(canon: Canon, lay: _Layout) -> tuple[FloatArray, FloatArray, np.ndarray]:
    n = lay.n_cols
    lower = np.zeros(n)
    upper = np.full(n, np.inf)
    integrality = np.zeros(n, dtype=np.uint8)
    upper[: lay.n_x] = lay.sel.upper
    integrality[: lay.n_x] = 1
    upper[lay.z0 : lay.y0] = canon.demand[lay.pair_s]
    upper[lay.y0 : lay.e0] = 1.0
    integrality[lay.y0 : lay.e0] = 1
    return lower, upper, integrality


def _cost_upper_bound(canon: Canon, sel: Selection) -> float:
    """Cost units of some feasible fleet (an upper bound on the optimum): the cheapest
    one-option fleet ``max(ceil(m / r[g]), ceil(L[g]))`` units among options that serve every
    demanded shape within their bound; the whole box ``sum_g c[g] * U[g]`` when there is none."""
    cols = sel.cols
    covers = np.all(canon.cap[canon.demanded][:, cols] > 0.0, axis=0)
    need = need_units(canon, cols)
    fits = covers & (need <= sel.upper)
    if bool(fits.any()):
        return float(np.min(canon.cost[cols][fits] * need[fits]))
    return float(np.sum(canon.cost[cols] * sel.upper))


def _card_weight(canon: Canon, sel: Selection, cost_bound: float) -> float:
    """``W``: more than the cards of any cheapest fleet. Such a fleet costs at most
    ``cost_bound`` units, so it has at most ``cost_bound / min_g(c[g] / tp[g])`` cards; and no
    fleet within the bounds has more than ``sum_g tp[g] * U[g]``."""
    tp = canon.tp[sel.cols].astype(np.float64)
    per_card = float(np.min(canon.cost[sel.cols] / tp))
    by_cost = math.floor(cost_bound / per_card)
    return 1.0 + min(float(np.sum(tp * sel.upper)), float(by_cost))


def _cost_model(
    canon: Canon, sel: Selection, *, card_weight: float | None
) -> tuple[MilpModel, _Layout]:
    """Stage 1. With ``card_weight`` ``W``: objective ``W * cost + cards`` (cost units times
    ``W``), the one-stage lexicographic form; otherwise cost alone (stage 2 breaks ties)."""
    lay = _layout(canon, sel)
    rows = _core_rows(canon, lay, scale_col=None, soft_caps=False)
    a, lo, hi = rows.matrix(lay.n_cols)
    c = np.zeros(lay.n_cols)
    if card_weight is not None:
        c[: lay.n_x] = canon.cost[sel.cols] * card_weight + canon.tp[sel.cols]
    else:
        c[: lay.n_x] = canon.cost[sel.cols]
    col_lo, col_hi, integrality = _bounds(canon, lay)
    return MilpModel(c, a, lo, hi, col_lo, col_hi, integrality), lay


def _tiebreak_model(model: MilpModel, canon: Canon, lay: _Layout, cost_star: float) -> MilpModel:
    """Stage 2: minimise the tie-break weight among fleets costing at most ``cost_star`` units.

    The cost row is divided by ``cost_star`` (dimensionless) to keep it in range."""
    n = lay.n_cols
    cost = canon.cost[lay.sel.cols]
    budget_row = sparse.csc_array(
        (cost / cost_star, (np.zeros(lay.n_x, np.int64), np.arange(lay.n_x))), shape=(1, n)
    )
    a = sparse.vstack([model.a, budget_row], format="csc")
    c = np.zeros(n)
    c[: lay.n_x] = canon.weight[lay.sel.cols]
    return MilpModel(
        c,
        sparse.csc_array(a),
        np.append(model.row_lower, -np.inf),
        np.append(model.row_upper, 1.0 + 0.5 / cost_star),
        model.col_lower,
        model.col_upper,
        model.integrality,
    )


def _scale_model(canon: Canon, sel: Selection) -> tuple[MilpModel, _Layout]:
    """Load-scaling solve: maximise lam (column ``lay.e0``) subject to C1(lam)-C6."""
    lay = _layout(canon, sel, extra=1)
    lam = lay.e0
    rows = _core_rows(canon, lay, scale_col=lam, soft_caps=False)
    budget = canon.budget_units if canon.budget_units is not None else math.inf
    # C6 budget: sum_g c[g] x[g] / B <= 1
    if math.isfinite(budget) and budget > 0:
        rows.add(np.arange(lay.n_x), canon.cost[sel.cols] / budget, -np.inf, 1.0)
    a, lo, hi = rows.matrix(lay.n_cols)
    c = np.zeros(lay.n_cols)
    c[lam] = -1.0
    col_lo, col_hi, integrality = _bounds(canon, lay)
    col_hi[lay.z0 : lay.y0] = np.inf
    return MilpModel(c, a, lo, hi, col_lo, col_hi, integrality), lay


@dataclass(frozen=True, slots=True)
class _CapRow:
    """One C3 row ``sum coef * x[cols] <= limit`` (selection columns) and what it stands for."""

    code: ReasonCode  # MAX_CARDS (cards of a GPU) or MAX_UNITS (units of an offer)
    subject: str
    cols: IntArray
    coef: FloatArray
    limit: float
    cards_per_unit: float  # cards one unit of slack stands for (1, or tp for unit caps)


def _cap_rows(canon: Canon, sel: Selection, *, include_unit_caps: bool) -> list[_CapRow]:
    """C3 rows that can bind within the variable bounds: card caps per GPU and, when
    ``include_unit_caps`` (elastic), unit caps per offer (otherwise those are bounds)."""
    out: list[_CapRow] = []
    gpu_sel = canon.gpu_of[sel.cols]
    tp_sel = canon.tp[sel.cols].astype(np.float64)
    for i in np.unique(gpu_sel):
        k_i = float(canon.card_cap[i])
        mine = np.flatnonzero(gpu_sel == i).astype(np.int64)
        if math.isfinite(k_i) and float(np.sum(tp_sel[mine] * sel.upper[mine])) > k_i:
            out.append(
                _CapRow(ReasonCode.MAX_CARDS, canon.gpus[int(i)], mine, tp_sel[mine], k_i, 1.0)
            )
    if include_unit_caps:
        for j in range(sel.size):
            u_g = float(canon.max_units[sel.cols[j]])
            if math.isfinite(u_g) and u_g < sel.upper[j]:
                out.append(
                    _CapRow(
                        ReasonCode.MAX_UNITS,
                        canon.keys[int(sel.cols[j])],
                        np.array([j], dtype=np.int64),
                        np.ones(1),
                        u_g,
                        float(tp_sel[j]),
                    )
                )
    return out


def _elastic_model(canon: Canon, sel: Selection) -> tuple[MilpModel, _Layout, list[_CapRow]]:
    """Diagnosis: caps become soft (C3 with slack columns); minimise cards over the caps."""
    caps = _cap_rows(canon, sel, include_unit_caps=True)
    lay = _layout(canon, sel, extra=len(caps))
    rows = _core_rows(canon, lay, scale_col=None, soft_caps=True)
    a, lo, hi = rows.matrix(lay.n_cols)
    c = np.zeros(lay.n_cols)
    c[lay.e0 :] = [cap_row.cards_per_unit for cap_row in caps]
    col_lo, col_hi, integrality = _bounds(canon, lay)
    return MilpModel(c, a, lo, hi, col_lo, col_hi, integrality), lay, caps


# --------------------------------------------------------------------------- results


def _fleet_from(canon: Canon, lay: _Layout, values: FloatArray) -> Fleet:
    x = np.zeros(len(canon.keys), dtype=np.int64)
    x[lay.sel.cols] = np.rint(values[: lay.n_x]).astype(np.int64)
    served = np.zeros_like(canon.cap)
    demanded = np.flatnonzero(canon.demanded)
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
    return Fleet(x, served)


def _cost_units(canon: Canon, fleet: Fleet) -> float:
    return float(np.dot(canon.cost, fleet.x))


def _solution(
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
        binding=diagnose.active_constraints(canon, fleet.x, _cost_units(canon, fleet)),
        mip_gap=mip_gap,
        reasons=reasons,
    )


def _infeasible(reasons: tuple[Reason, ...]) -> FleetSolution:
    return FleetSolution(status=SolveStatus.INFEASIBLE, reasons=reasons)


# --------------------------------------------------------------------------- cost solve


def _empty_fleet(canon: Canon) -> Fleet:
    return Fleet(np.zeros(len(canon.keys), dtype=np.int64), np.zeros_like(canon.cap))


def _minimum_cost_fleet(canon: Canon, gpu_id: str | None) -> FleetSolution:
    """The cheapest fleet in scope (all options, or ``gpu_id``'s), before the budget check:
    coverage reasons, pruning, the exact path or the MILP (with its tie-break), diagnosis."""
    reasons = diagnose.coverage_reasons(canon, gpu_id)
    if reasons:
        return _infeasible(reasons)
    sel = select(canon, Mode.COST, gpu_id)
    needs_fleet = bool(canon.demanded.any()) or canon.min_replicas > 0
    if sel.size == 0:
        if not needs_fleet:
            return _solution(canon, _empty_fleet(canon), SolveStatus.OPTIMAL)
        return _infeasible(_diagnose(canon, gpu_id))
    handled, exact = exact_fleet(canon, sel)
    if handled:
        if exact is None:
            return _infeasible(_diagnose(canon, gpu_id))
        return _solution(canon, exact, SolveStatus.OPTIMAL)

    # One stage when W * cost stays well inside exact float range, else two stages.
    cost_bound = _cost_upper_bound(canon, sel)
    weight = _card_weight(canon, sel, cost_bound)
    one_stage = cost_bound * weight <= ONE_STAGE_MAX_OBJECTIVE
    model, lay = _cost_model(canon, sel, card_weight=weight if one_stage else None)
    first = solve_milp(model, time_limit_s=canon.time_limit_s)
    if first.outcome is Outcome.INFEASIBLE:
        return _infeasible(_diagnose(canon, gpu_id))
    if first.outcome is Outcome.TIME_LIMIT_NO_SOLUTION:
        return _infeasible((diagnose.time_limit_reason(),))
    if first.x is None or first.outcome is Outcome.ERROR:
        return _infeasible((diagnose.solver_error_reason(),))
    fleet = _fleet_from(canon, lay, first.x)
    if first.outcome is Outcome.TIME_LIMIT_WITH_SOLUTION:
        return _solution(
            canon,
            fleet,
            SolveStatus.TIME_LIMIT,
            mip_gap=first.mip_gap,
            reasons=(diagnose.time_limit_reason(found=True),),
        )
    if not one_stage:
        fleet = _tiebreak(canon, model, lay, fleet)
    return _solution(canon, fleet, SolveStatus.OPTIMAL)


def _tiebreak(canon: Canon, model: MilpModel, lay: _Layout, fleet: Fleet) -> Fleet:
    cost_star = _cost_units(canon, fleet)
    if cost_star <= 0.0:
        return fleet
    second = solve_milp(
        _tiebreak_model(model, canon, lay, cost_star), time_limit_s=canon.time_limit_s
    )
    if second.x is None:
        return fleet
    candidate = _fleet_from(canon, lay, second.x)
    if _cost_units(canon, candidate) > cost_star:
        return fleet
    weight = float(np.dot(canon.weight, candidate.x))
    if weight > float(np.dot(canon.weight, fleet.x)):
        return fleet
    return candidate


def _with_budget(
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


# --------------------------------------------------------------------------- diagnosis


def _diagnose(canon: Canon, gpu_id: str | None) -> tuple[Reason, ...]:
    """Why no fleet fits the caps: min_replicas beyond what the caps allow, each cap that must
    grow (elastic solve: caps soft, minimise cards over them) and, for single-type problems,
    whether a mix would fit."""
    reasons: list[Reason] = []
    min_rep = diagnose.min_replicas_reason(canon, gpu_id)
    if min_rep is not None:
        reasons.append(min_rep)
    sel = select(canon, Mode.ELASTIC, gpu_id)
    if sel.size:
        model, lay, caps = _elastic_model(canon, sel)
        result = solve_milp(model, time_limit_s=canon.time_limit_s)
        if result.x is not None:
            for k, cap_row in enumerate(caps):
                excess = float(result.x[lay.e0 + k])
                if excess > 0.5:
                    reasons.append(diagnose.cap_reason(cap_row.code, cap_row.subject, excess))
        elif result.outcome is Outcome.TIME_LIMIT_NO_SOLUTION:
            reasons.append(diagnose.time_limit_reason())
        if gpu_id is None and not canon.allow_mix and len(canon.gpus) > 1 and _mix_fits(canon):
            reasons.append(diagnose.single_type_reason())
    if not reasons:
        reasons.append(diagnose.solver_error_reason())
    return tuple(reasons)


def _mix_fits(canon: Canon) -> bool:
    """Would the caps admit a fleet if GPU types could be mixed?"""
    mixed = _replace_allow_mix(canon)
    sel = select(mixed, Mode.ELASTIC)
    if sel.size == 0:
        return False
    model, _, _ = _elastic_model(mixed, sel)
    result = solve_milp(model, time_limit_s=canon.time_limit_s)
    return result.outcome is Outcome.OPTIMAL and result.objective < 0.5


def _replace_allow_mix(canon: Canon) -> Canon:
    return replace(canon, allow_mix=True)


# --------------------------------------------------------------------------- load scaling


def _max_scale(canon: Canon, gpu_id: str | None) -> tuple[float, MilpResult | None]:
    """Largest ``lam`` such that ``D * lam`` fits C2-C6 (0.0 when nothing fits). One option
    and no single-type rule: its most units ``U`` carry ``U / L`` times the demand, if those
    units host ``min_replicas``."""
    if not bool(canon.demanded.any()) or canon.budget_units is None:
        return 0.0, None
    if diagnose.coverage_reasons(canon, gpu_id):
        return 0.0, None
    sel = select(canon, Mode.SCALE, gpu_id)
    if sel.size == 0:
        return 0.0, None
    if sel.size == 1 and not sel.single_type:
        g = int(sel.cols[0])
        if bool(np.any(canon.cap[canon.demanded, g] <= 0.0)):
            return 0.0, None
        units = float(sel.upper[0])
        if units * float(canon.rpu[g]) < canon.min_replicas:
            return 0.0, None
        return units / float(load_units(canon, sel.cols)[0]), None
    model, lay = _scale_model(canon, sel)
    result = solve_milp(model, time_limit_s=canon.time_limit_s)
    if result.x is None:
        return 0.0, result
    return max(0.0, float(result.x[lay.e0])), result


def _max_scale_qps(canon: Canon, gpu_id: str | None) -> float:
    lam, _ = _max_scale(canon, gpu_id)
    return lam * canon.raw_demand_total * (1.0 - SCALE_SAFETY)


# --------------------------------------------------------------------------- public API


def solve_fleet(problem: FleetProblem) -> FleetSolution:
    """The cheapest fleet for ``problem`` (see the module docstring for the model).

    Status ``optimal``/``infeasible``/``time_limit`` as HiGHS proves them; ``over_budget`` with
    the cheapest fleet and ``max_qps_within_budget`` when that fleet costs more than the budget.
    ``max_qps_within_budget`` is left ``None`` otherwise (call :func:`max_qps_within_budget`).

    Makes at most three HiGHS calls, each limited to ``problem.time_limit_s`` seconds (wall
    clock, HiGHS' own timer): the cost solve (plus a tie-break stage only for huge objectives),
    then either the load-scaling solve (over budget) or the diagnosis (infeasible: caps made soft,
    and for single-type problems "would a mix fit?"). Scopes with one or two options left after
    pruning make no HiGHS call at all. If the load-scaling solve stops at its time limit, the best
    load it found is reported (a lower bound).
    """
    canon = canonicalize(problem)
    return _with_budget(canon, _minimum_cost_fleet(canon, None), None, scale=True)


def max_qps_within_budget(problem: FleetProblem) -> float:
    """Total offered load in requests/s, BEFORE headroom, that a fleet within
    ``problem.budget_usd_per_hour`` serves, keeping each bucket's share of the demand and every
    other constraint (headroom, caps, ``min_replicas``, ``allow_mix``).

    0.0 when nothing fits the budget, and when the workload has no demand (no mix to scale).
    Raises :class:`InvalidInput` when the problem has no budget.
    """
    if problem.budget_usd_per_hour is None:
        raise InvalidInput("max_qps_within_budget needs a budget", field="budget_usd_per_hour")
    return _max_scale_qps(canonicalize(problem), None)


def solve_single_type(
    problem: FleetProblem, gpu_id: str, *, with_max_qps: bool = False
) -> FleetSolution:
    """The cheapest fleet that uses only ``gpu_id`` (any of its offers and tensor-parallel
    degrees), with the budget applied as in :func:`solve_fleet`; the load-scaling solve runs
    only if ``with_max_qps``. Raises :class:`InvalidInput` for a GPU no option uses."""
    canon = canonicalize(problem)
    if gpu_id not in canon.gpus:
        raise InvalidInput(f"no option uses GPU {gpu_id!r}", field="gpu_id")
    return _with_budget(canon, _minimum_cost_fleet(canon, gpu_id), gpu_id, scale=with_max_qps)


def cheapest_single_type(
    problem: FleetProblem, *, with_max_qps: bool = False
) -> dict[str, FleetSolution]:
    """Per GPU id (sorted), the cheapest fleet of that GPU alone: the "alternatives" list.

    GPUs that cannot meet the demand are included with status ``infeasible`` and reasons
    (``gpu_cannot_serve`` for a shape it cannot serve under the SLO, caps otherwise). The
    problem is canonicalised once; each GPU is a small MILP (or a closed form when one option
    survives pruning, the common case).
    """
    canon = canonicalize(problem)
    return {
        gpu: _with_budget(canon, _minimum_cost_fleet(canon, gpu), gpu, scale=with_max_qps)
        for gpu in canon.gpus
    }
