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
    tp[g]    cards per unit of g (FleetOption.cards_per_unit)
    r[g]     model replicas per unit of g (FleetOption.replicas_per_unit >= 1)
    u[g]     unit cap of offer g (FleetOption.max_units, in units; inf if none)
    K[i]     card cap of GPU i (max_cards, inf if none)
    m        min_replicas (model replicas);  B  budget, USD/hour
    n[g]     ceil(line_min_replicas / r[g]): the fewest units of g a used line may have
    P, R     providers, regions (a region is one provider's); q ranges over the lost place

Variables::

    x[g]   in Z>=0   units of option g
    z[s,g] >= 0      requests/s of bucket s served by g (only where cap[s,g] > 0)
    y[i]   in {0,1}  GPU i is used (only when allow_mix is False and >1 GPU remains, or
                     max_gpu_types = T >= 2 and more than T GPUs remain)
    w[g]   in {0,1}  line g is used (only for options with n[g] >= 2)
    v[p]   in {0,1}  provider (region) p is used (only when min_providers (min_regions) >= 2)
    z_q[s,g] >= 0    requests/s of bucket s served by g once place q is lost (only with
                     spread, g outside q, cap[s,g] > 0; aggregated like C1+C2 when one shape
                     is demanded or routing is shared)

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
       type limit   sum_i y[i] <= T; x[g] <= U[g] * y[gpu(g)]   when max_gpu_types = T >= 2
    C6 budget       sum_g c[g] * x[g] <= B                      (only in the load-scaling solve)
    C7 line minimum n[g] * w[g] <= x[g] <= U[g] * w[g]         for every g with n[g] >= 2
    C8 spread count v[p] <= sum_{g in p} x[g];  sum_p v[p] >= k  (k = min_providers or
                    min_regions >= 2; per providers and per regions)
    C9 survival     for every place q the fleet could use (providers when min_providers >= 2,
                    regions when min_regions >= 2): C1 and C2 over z_q and the options
                    outside q, with the same x: the rest of the fleet carries every D[s]

Shared routing (``FleetProblem.shared``, more than one demanded shape): every unit serves the
whole mix, so option g carries the same fraction f[g] of every shape, z[s,g] = f[g] * D[s], and
C1 + C2 become ``sum_g f[g] = 1``, ``f[g] * L[g] <= x[g]`` with ``L[g] = sum_s D[s] / cap[s,g]``
(the units g needs to carry the whole mix alone); eliminating f, one pure-integer row::

    C1+C2 shared    sum_g x[g] / L[g] >= 1                      (or >= lam when load-scaling)

over the options that serve every demanded shape (the others cannot be used). Decoding gives
each option the share ``(x[g] / L[g]) / sum_h (x[h] / L[h])`` of every shape.

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
``U[g] = min(u[g], floor(K / tp[g]), floor(B / c[g]))``. The same argument holds with C7-C9
when the bound is raised to ``n[g]`` wherever it is not 0 (g then keeps at least ``n[g]``
units), and in every survival scenario that keeps g, g alone still carries all it can serve.
A cost solve lowers ``U[g]`` further where ``n >= 2`` units of g can be swapped for one larger
unit of the same replica at no extra cost (:func:`prune.consolidation_bounds`: at most
``n - 1`` such units, or ``n + n[g] - 1`` with a line minimum).

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
when one type is required) is solved exactly without HiGHS (:mod:`exact`), as is one GPU's
scope of up to four replica types (:mod:`replica_types`).

Load-scaling solve (``max_qps_within_budget``): maximise ``lam >= 0`` subject to C1 with
``D[s] * lam`` on the right, C2-C5 and C6. The reported figure is ``lam * sum_s d[s]``: total
offered requests/s BEFORE headroom (the fleet serves it with the configured headroom), with the
same shape mix as the demand, rounded down by one part per million to absorb solver tolerance.

Where each piece lives: this module builds the models (C1-C6 are labelled below as in this
docstring); :mod:`min_cost` runs the cost solve, its tie-break stage and the infeasibility
diagnosis; :mod:`budget` the load-scaling solve; :mod:`single_type` the per-GPU solves;
:mod:`decode` turns HiGHS' column values back into fleets and results.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import sparse

from service.domain.solver.highs import MilpModel
from service.domain.solver.problem import ReasonCode
from service.domain.solver.prune import (
    Canon,
    FloatArray,
    IntArray,
    Selection,
    load_units,
    need_units,
    places_of,
)


@dataclass(frozen=True, slots=True)
class PlaceColumns:
    """The C7-C9 columns of one model (all empty without line minimums or spread).

    ``w_j``: selection index of each line-use binary ``w`` (C7). ``v_place``: per place
    binary ``v`` (C8), the place's index in ``place_of`` of its kind ``v_kind`` (0 providers,
    1 regions). ``lost_kind`` / ``lost_place``: per survival scenario (C9) the place lost.
    ``sz_s`` / ``sz_j`` / ``sz_q``: bucket, selection index and scenario of each scenario
    ``z`` column (none when C1+C2 are aggregated)."""

    w_j: IntArray
    v_kind: IntArray
    v_place: IntArray
    lost_kind: IntArray
    lost_place: IntArray
    sz_s: IntArray
    sz_j: IntArray
    sz_q: IntArray

    @property
    def n_cols(self) -> int:
        return int(self.w_j.size + self.v_place.size + self.sz_s.size)


@dataclass(frozen=True, slots=True)
class Layout:
    """Column map of one model: x first, then z pairs, then y, then the C7-C9 columns (w, v,
    scenario z), then extra columns."""

    sel: Selection
    pair_s: IntArray  # bucket index (canon) of each z column
    pair_j: IntArray  # selection index of each z column
    y_gpus: IntArray  # canon GPU index of each y column
    extra: int  # columns after the rest (lambda, or slacks)
    spread: PlaceColumns

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
    def w0(self) -> int:
        return self.y0 + int(self.y_gpus.size)

    @property
    def v0(self) -> int:
        return self.w0 + int(self.spread.w_j.size)

    @property
    def sz0(self) -> int:
        return self.v0 + int(self.spread.v_place.size)

    @property
    def e0(self) -> int:
        return self.w0 + self.spread.n_cols

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


def _layout(canon: Canon, sel: Selection, extra: int = 0) -> Layout:
    demanded = canon.demanded
    cap = canon.cap[:, sel.cols]
    servable = (cap > 0.0) & demanded[:, None]
    if int(demanded.sum()) == 1 or canon.shared:
        servable[:] = False  # one shape or shared: no z columns, C1 + C2 aggregate (_core_rows)
    pair_s, pair_j = np.nonzero(servable)  # row-major: sorted by bucket, then option
    y_gpus = (
        np.unique(canon.gpu_of[sel.cols]).astype(np.int64)
        if sel.type_rows
        else np.zeros(0, np.int64)
    )
    return Layout(
        sel,
        pair_s.astype(np.int64),
        pair_j.astype(np.int64),
        y_gpus,
        extra,
        _spread_layout(canon, sel, aggregate=int(demanded.sum()) == 1 or canon.shared),
    )


def _ints(values: list[int]) -> IntArray:
    return np.array(values, dtype=np.int64)


def _spread_layout(canon: Canon, sel: Selection, *, aggregate: bool) -> PlaceColumns:
    empty = np.zeros(0, np.int64)
    w_j = np.flatnonzero(canon.line_units[sel.cols] >= 2.0).astype(np.int64)
    v_kind: list[int] = []
    v_place: list[int] = []
    lost_kind: list[int] = []
    lost_place: list[int] = []
    for kind, least in ((0, canon.min_providers), (1, canon.min_regions)):
        if least < 2 or not canon.needs_fleet:
            continue
        present = np.unique(places_of(canon, kind)[sel.cols])
        v_kind += [kind] * present.size
        v_place += present.tolist()
        lost_kind += [kind] * present.size
        lost_place += present.tolist()
    sz_s, sz_j, sz_q = empty, empty, empty
    if lost_place and not aggregate:
        parts_s, parts_j, parts_q = [], [], []
        servable = (canon.cap[:, sel.cols] > 0.0) & canon.demanded[:, None]
        for q, (kind, place) in enumerate(zip(lost_kind, lost_place, strict=True)):
            kept = places_of(canon, kind)[sel.cols] != place
            s, j = np.nonzero(servable & kept[None, :])
            parts_s.append(s)
            parts_j.append(j)
            parts_q.append(np.full(s.size, q))
        sz_s = np.concatenate(parts_s).astype(np.int64)
        sz_j = np.concatenate(parts_j).astype(np.int64)
        sz_q = np.concatenate(parts_q).astype(np.int64)
    return PlaceColumns(
        w_j=w_j,
        v_kind=_ints(v_kind),
        v_place=_ints(v_place),
        lost_kind=_ints(lost_kind),
        lost_place=_ints(lost_place),
        sz_s=sz_s,
        sz_j=sz_j,
        sz_q=sz_q,
    )


def _core_rows(canon: Canon, lay: Layout, *, scale_col: int | None, soft_caps: bool) -> _Rows:
    """C1-C5 over the layout. ``scale_col``: the lambda column (C1 becomes ``= D * lam``).
    ``soft_caps``: C3 rows get slack columns (elastic diagnosis) starting at ``lay.e0``."""
    sel = lay.sel
    rows = _Rows()
    n_x = lay.n_x
    z_cols = np.arange(lay.z0, lay.y0, dtype=np.int64)
    demand = canon.demand

    demanded = np.flatnonzero(canon.demanded)
    agg_vals: FloatArray | None = None  # C1+C2 in one row: its coefficients per x column
    if demanded.size == 1:
        # C1 + C2 with one shape: z[s,g] = cap[s,g] * (time share) fits iff
        # sum_g cap[s,g] x[g] >= D[s] (or >= D[s] lam); divided by D[s]. Pure integer row.
        only = int(demanded[0])
        agg_vals = canon.cap[only, sel.cols] / demand[only]
    elif canon.shared:
        # C1+C2 shared: sum_g x[g] / L[g] >= 1 (or - lam >= 0); every selected option serves
        # every demanded shape, so L[g] > 0 is finite.
        agg_vals = 1.0 / load_units(canon, sel.cols)

    if agg_vals is not None:
        if scale_col is None:
            rows.add(np.arange(n_x), agg_vals, 1.0, np.inf)
        else:
            rows.add(np.append(np.arange(n_x), scale_col), np.append(agg_vals, -1.0), 0.0, np.inf)
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

    # C5 single type / type limit: x[g] - U[g] y[gpu(g)] <= 0;  sum_i y[i] = 1 (or <= T)
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
        most = 1.0 if sel.single_type else float(sel.max_types)
        least = 1.0 if sel.single_type else 0.0
        rows.add(np.arange(lay.y0, lay.w0, dtype=np.int64), np.ones(lay.y_gpus.size), least, most)
    _spread_rows(canon, lay, rows, scale_col, agg_vals)
    return rows


def _spread_rows(
    canon: Canon, lay: Layout, rows: _Rows, scale_col: int | None, agg_vals: FloatArray | None
) -> None:
    """C7-C9 over the layout (nothing without line minimums or spread)."""
    sp, sel = lay.spread, lay.sel
    # C7 line minimum: x[g] - n[g] w[g] >= 0;  x[g] - U[g] w[g] <= 0
    if sp.w_j.size:
        k = np.arange(sp.w_j.size, dtype=np.int64)
        idx = np.concatenate([k, k])
        cols = np.concatenate([sp.w_j, lay.w0 + k])
        n_min = canon.line_units[sel.cols[sp.w_j]]
        ones = np.ones(k.size)
        rows.add_block(
            idx, cols, np.concatenate([ones, -n_min]), np.zeros(k.size), np.full(k.size, np.inf)
        )
        rows.add_block(
            idx,
            cols,
            np.concatenate([ones, -sel.upper[sp.w_j]]),
            np.full(k.size, -np.inf),
            np.zeros(k.size),
        )
    # C8 spread count: v[p] - sum_{g in p} x[g] <= 0;  sum_p v[p] >= k
    for kind, least in ((0, canon.min_providers), (1, canon.min_regions)):
        mine = np.flatnonzero(sp.v_kind == kind)
        if mine.size == 0:
            continue
        place_sel = places_of(canon, kind)[sel.cols]
        for m in mine:
            members = np.flatnonzero(place_sel == sp.v_place[m]).astype(np.int64)
            rows.add(
                np.append(members, lay.v0 + m), np.append(-np.ones(members.size), 1.0), -np.inf, 0
            )
        rows.add(lay.v0 + mine.astype(np.int64), np.ones(mine.size), float(least), np.inf)
    # C9 survival: without place q the rest carries every D[s] (or D[s] lam)
    demand = canon.demand
    for q in range(sp.lost_place.size):
        kept = places_of(canon, int(sp.lost_kind[q]))[sel.cols] != sp.lost_place[q]
        if agg_vals is not None:
            cols = np.flatnonzero(kept).astype(np.int64)
            if scale_col is None:
                rows.add(cols, agg_vals[cols], 1.0, np.inf)
            else:
                rows.add(np.append(cols, scale_col), np.append(agg_vals[cols], -1.0), 0.0, np.inf)
            continue
        mine = np.flatnonzero(sp.sz_q == q)
        z_cols = (lay.sz0 + mine).astype(np.int64)
        for s in np.flatnonzero(canon.demanded):
            cols = z_cols[sp.sz_s[mine] == s]
            vals = np.full(cols.size, 1.0 / demand[s])
            if scale_col is None:
                rows.add(cols, vals, 1.0, 1.0)
            else:
                rows.add(np.append(cols, scale_col), np.append(vals, -1.0), 0.0, 0.0)
        js = sp.sz_j[mine]
        if js.size == 0:
            continue
        caps = canon.cap[sp.sz_s[mine], sel.cols[js]]
        used = np.unique(js)
        rows.add_block(
            np.concatenate([np.searchsorted(used, js), np.arange(used.size)]),
            np.concatenate([z_cols, used]),
            np.concatenate([1.0 / caps, -np.ones(used.size)]),
            np.full(used.size, -np.inf),
            np.zeros(used.size),
        )


def _bounds(canon: Canon, lay: Layout) -> tuple[FloatArray, FloatArray, np.ndarray]:
    n = lay.n_cols
    lower = np.zeros(n)
    upper = np.full(n, np.inf)
    integrality = np.zeros(n, dtype=np.uint8)
    upper[: lay.n_x] = lay.sel.upper
    integrality[: lay.n_x] = 1
    upper[lay.z0 : lay.y0] = canon.demand[lay.pair_s]
    upper[lay.y0 : lay.sz0] = 1.0  # y, w, v binaries
    integrality[lay.y0 : lay.sz0] = 1
    upper[lay.sz0 : lay.e0] = canon.demand[lay.spread.sz_s]
    return lower, upper, integrality


def cost_upper_bound(canon: Canon, sel: Selection) -> float:
    """Cost units of some feasible fleet (an upper bound on the optimum): the cheapest
    one-option fleet ``max(ceil(m / r[g]), ceil(L[g]))`` units among options that serve every
    demanded shape within their bound (with spread, :func:`spread_first_fleet`); the whole box
    ``sum_g c[g] * U[g]`` when there is none."""
    cols = sel.cols
    if canon.spread:
        first = spread_first_fleet(canon, sel)
        if first is not None:
            picked, units = first
            return float(np.sum(canon.cost[cols[picked]] * units))
        return float(np.sum(canon.cost[cols] * sel.upper))
    covers = np.all(canon.cap[canon.demanded][:, cols] > 0.0, axis=0)
    need = need_units(canon, cols)
    fits = covers & (need <= sel.upper)
    if bool(fits.any()):
        return float(np.min(canon.cost[cols][fits] * need[fits]))
    return float(np.sum(canon.cost[cols] * sel.upper))


def one_option_objective(canon: Canon, sel: Selection, model: MilpModel) -> float | None:
    """The objective ``model`` gives the cheapest one-option fleet of :func:`cost_upper_bound`
    (``max(ceil(m / r[g]), ceil(L[g]))`` units of an option that serves every demanded shape
    within its bound), ``None`` when no option does: a feasible fleet's value, so the optimum
    is at most this (HiGHS prunes with it; see :func:`highs.solve_milp`). With spread, one
    option never survives the loss of its own place: the value of :func:`spread_first_fleet`."""
    cols = sel.cols
    if canon.spread:
        first = spread_first_fleet(canon, sel)
        if first is None:
            return None
        picked, units = first
        return float(np.sum(model.c[: sel.size][picked] * units))
    covers = np.all(canon.cap[canon.demanded][:, cols] > 0.0, axis=0)
    need = need_units(canon, cols)
    fits = covers & (need <= sel.upper)
    if not bool(fits.any()):
        return None
    return float(np.min(model.c[: sel.size][fits] * need[fits]))


def spread_first_fleet(canon: Canon, sel: Selection) -> tuple[IntArray, FloatArray] | None:
    """A feasible fleet under spread, for the bound and the card weight: ``k`` one-option
    fleets (each ``max(ceil(m / r[g]), ceil(L[g]))`` units of an option serving every demanded
    shape within its bound) in ``k`` different places, ``k = max(min_providers,
    min_regions)``, places being providers when ``min_providers >= 2``, else regions (one
    provider's regions are its own, so different providers are different regions). Losing any
    place removes at most one of them and each of the others carries every shape alone (C9);
    the places count ``k`` (C8); each keeps its own bound, and the card caps are checked. One
    GPU's options only when a type rule is in force. The cheapest such fleet over the GPUs
    (and over all options without a type rule), each place's cheapest option taken in order of
    cost; ``None`` when there is none. Returns selection indices and their units."""
    cols = sel.cols
    need = need_units(canon, cols)
    covers = np.all(canon.cap[canon.demanded][:, cols] > 0.0, axis=0)
    fits = covers & (need <= sel.upper) & (need > 0.0)
    if not bool(fits.any()):
        return None
    kind = 0 if canon.min_providers >= 2 else 1
    k = max(canon.min_providers, canon.min_regions)
    place = places_of(canon, kind)[cols]
    cost = canon.cost[cols] * need
    gpu = canon.gpu_of[cols]
    tp = canon.tp[cols].astype(np.float64)
    if sel.type_rows:
        groups = [np.flatnonzero(fits & (gpu == i)) for i in np.unique(gpu[fits])]
    else:
        groups = [np.flatnonzero(fits)]
    best: tuple[float, IntArray] | None = None
    for group in groups:
        order = group[np.lexsort((group, cost[group]))]
        _, first_of_place = np.unique(place[order], return_index=True)
        if first_of_place.size < k:
            continue
        picked = order[np.sort(first_of_place)[:k]]
        cards = np.bincount(gpu[picked], weights=tp[picked] * need[picked])
        used = np.flatnonzero(cards)
        if np.any(cards[used] > canon.card_cap[used]):
            continue
        total = float(np.sum(cost[picked]))
        if best is None or total < best[0]:
            best = (total, picked.astype(np.int64))
    if best is None:
        return None
    return best[1], need[best[1]]


def card_weight(canon: Canon, sel: Selection, cost_bound: float) -> float:
    """``W``: more than the cards of any cheapest fleet. Such a fleet costs at most
    ``cost_bound`` units, so it has at most ``cost_bound / min_g(c[g] / tp[g])`` cards; and no
    fleet within the bounds has more than ``sum_g tp[g] * U[g]``."""
    tp = canon.tp[sel.cols].astype(np.float64)
    per_card = float(np.min(canon.cost[sel.cols] / tp))
    by_cost = math.floor(cost_bound / per_card)
    return 1.0 + min(float(np.sum(tp * sel.upper)), float(by_cost))


def cost_model(
    canon: Canon, sel: Selection, *, card_weight: float | None
) -> tuple[MilpModel, Layout]:
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


def tiebreak_model(model: MilpModel, canon: Canon, lay: Layout, cost_star: float) -> MilpModel:
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


def scale_model(canon: Canon, sel: Selection) -> tuple[MilpModel, Layout]:
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
    col_hi[lay.sz0 : lay.e0] = np.inf
    return MilpModel(c, a, lo, hi, col_lo, col_hi, integrality), lay


@dataclass(frozen=True, slots=True)
class CapRow:
    """One C3 row ``sum coef * x[cols] <= limit`` (selection columns) and what it stands for."""

    code: ReasonCode  # MAX_CARDS (cards of a GPU) or MAX_UNITS (units of an offer)
    subject: str
    cols: IntArray
    coef: FloatArray
    limit: float
    cards_per_unit: float  # cards one unit of slack stands for (1, or tp for unit caps)


def _cap_rows(canon: Canon, sel: Selection, *, include_unit_caps: bool) -> list[CapRow]:
    """C3 rows that can bind within the variable bounds: card caps per GPU and, when
    ``include_unit_caps`` (elastic), unit caps per offer (otherwise those are bounds)."""
    out: list[CapRow] = []
    gpu_sel = canon.gpu_of[sel.cols]
    tp_sel = canon.tp[sel.cols].astype(np.float64)
    for i in np.unique(gpu_sel):
        k_i = float(canon.card_cap[i])
        mine = np.flatnonzero(gpu_sel == i).astype(np.int64)
        if math.isfinite(k_i) and float(np.sum(tp_sel[mine] * sel.upper[mine])) > k_i:
            out.append(
                CapRow(ReasonCode.MAX_CARDS, canon.gpus[int(i)], mine, tp_sel[mine], k_i, 1.0)
            )
    if include_unit_caps:
        for j in range(sel.size):
            u_g = float(canon.max_units[sel.cols[j]])
            if math.isfinite(u_g) and u_g < sel.upper[j]:
                out.append(
                    CapRow(
                        ReasonCode.MAX_UNITS,
                        canon.keys[int(sel.cols[j])],
                        np.array([j], dtype=np.int64),
                        np.ones(1),
                        u_g,
                        float(tp_sel[j]),
                    )
                )
    return out


def elastic_model(canon: Canon, sel: Selection) -> tuple[MilpModel, Layout, list[CapRow]]:
    """Diagnosis: caps become soft (C3 with slack columns); minimise cards over the caps."""
    caps = _cap_rows(canon, sel, include_unit_caps=True)
    lay = _layout(canon, sel, extra=len(caps))
    rows = _core_rows(canon, lay, scale_col=None, soft_caps=True)
    a, lo, hi = rows.matrix(lay.n_cols)
    c = np.zeros(lay.n_cols)
    c[lay.e0 :] = [cap_row.cards_per_unit for cap_row in caps]
    col_lo, col_hi, integrality = _bounds(canon, lay)
    return MilpModel(c, a, lo, hi, col_lo, col_hi, integrality), lay, caps
