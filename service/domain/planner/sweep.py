"""Curves around one plan: how its cost moves with load and with the latency SLO, and what each
GPU costs for this workload. Pure: the request and the snapshot in, values out.

* **Cost vs load** (:func:`cost_vs_load`). The candidates are built once, at the request's
  SLO; each load point scales every bucket's demand by the same factor and re-solves only the
  MILP, for the plan's policy (its constraints and mixing policy) and for each GPU alone. Costs are
  USD/hour with the budget ignored (the budget is reported beside the curve). The cheapest cost
  never falls as load grows (any fleet serving more serves less), so a fleet found at one point
  is still the cheapest at every later point it can carry: with its assignment scaled, up to
  ``load / max utilisation``. Those points reuse it and cost no solve; a 40-point curve solves
  once per step of the staircase, not once per point. A point needs the cheapest cost alone,
  so it is solved without the fewest-cards stage, and a solve that a lower bound
  (:func:`cost_floor`) shows cannot change the plan's curve is skipped: a mix the policy would
  not accept against the point's cheapest single type, and (for the plan's curve alone) a GPU
  no cheaper than the cheapest single type found so far.
* **Cost vs SLO** (:func:`cost_vs_slo`). The TPOT limit, then the TTFT limit, is scaled by
  each of :data:`SLO_FACTORS` with everything else as requested. A different limit changes what
  one replica sustains, so each point builds its candidates again and solves for the policy's
  cost as the plan's own cost-vs-load curve does (lower bounds skip what cannot change it).
* **Per GPU** (:func:`per_gpu`). For each GPU with a usable option, the option with the lowest
  cost per output token when its replicas run at the most load the SLO allows (no headroom):
  that load per replica for the request's mix, the price per replica-hour and the cost per
  million output tokens.
"""

from __future__ import annotations

import math
from concurrent.futures import Executor
from dataclasses import dataclass, replace
from typing import Literal

from service.domain.catalog import CatalogSnapshot
from service.domain.errors import InvalidInput
from service.domain.planner.candidates import Candidates, build_candidates, fleet_problem
from service.domain.planner.mixing import policy_usd_per_hour, vendor_scopes
from service.domain.planner.request import PlanRequest
from service.domain.solver import (
    Bucket,
    FleetProblem,
    FleetSolution,
    SolveStatus,
    solve_fleet,
    solve_single_type,
)
from service.domain.solver.prune import canonicalize

LOAD_POINTS = 40
"""Points of a cost-vs-load curve."""
LOAD_SPAN = 2.0
"""A cost-vs-load curve runs to this multiple of the requested load (further when a budget
carries more, up to :data:`LOAD_SPAN_MAX`)."""
LOAD_SPAN_MAX = 10.0
SLO_FACTORS = (0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.25, 1.5, 2.0, 3.0)
"""Multiples of the requested TPOT/TTFT limit a cost-vs-SLO curve solves at (< 1 tightens)."""
PLAN_SERIES = "plan"
"""The name of the series of the plan's own policy (its constraints, mixing GPUs if allowed)."""

SloMetric = Literal["tpot_ms", "ttft_ms"]


@dataclass(frozen=True, slots=True)
class CurvePoint:
    """``x`` in the curve's x unit; ``usd_per_hour`` the cheapest fleet there, ``None`` when
    no fleet meets the request at that point."""

    x: float
    usd_per_hour: float | None


@dataclass(frozen=True, slots=True)
class CostSeries:
    """One line of a cost curve. ``name`` is :data:`PLAN_SERIES` or a GPU id (that GPU alone)
    for cost vs load; the metric whose limit moves (``tpot_ms``, ``ttft_ms``) for cost vs SLO."""

    name: str
    gpu: str | None
    points: tuple[CurvePoint, ...]


@dataclass(frozen=True, slots=True)
class LoadCurve:
    """USD/hour against offered load (requests/s, before headroom)."""

    requested_qps: float
    budget_usd_per_hour: float | None
    series: tuple[CostSeries, ...]
    solves: int
    """MILP solves the sweep made (the rest of the points reused a fleet)."""


@dataclass(frozen=True, slots=True)
class SloCurve:
    """USD/hour of the plan's policy against one latency limit (ms), the other limits as
    requested. ``requested`` is each moved metric's requested limit."""

    requested: tuple[tuple[str, float], ...]
    percentile: float
    series: tuple[CostSeries, ...]


@dataclass(frozen=True, slots=True)
class GpuEconomics:
    """One GPU's cheapest way to serve this workload, its replicas at the most load the SLO
    allows. ``max_qps_per_replica`` is for the request's mix (requests/s);
    ``usd_per_million_output_tokens`` = replica price / (that load x mean output tokens)."""

    gpu: str
    tensor_parallel: int
    provider: str
    instance_type: str
    pricing: str
    usd_per_replica_hour: float
    max_qps_per_replica: float
    usd_per_million_output_tokens: float


@dataclass(frozen=True, slots=True)
class PerGpu:
    rows: tuple[GpuEconomics, ...]
    """Cheapest per million output tokens first."""


# ---- cost vs load ---------------------------------------------------------------------------


def load_points(request: PlanRequest, budget_qps: float | None) -> tuple[float, ...]:
    """:data:`LOAD_POINTS` evenly spaced loads (requests/s) from one step to about ``top``:
    twice the requested load, or the most load the budget carries when that is more (at most
    :data:`LOAD_SPAN_MAX` times the request). The step divides the requested load, so the
    request is one of the points."""
    top = request.qps * LOAD_SPAN
    if budget_qps is not None and budget_qps > top:
        top = min(budget_qps, request.qps * LOAD_SPAN_MAX)
    steps_to_request = max(1, round(request.qps / (top / LOAD_POINTS)))
    return tuple(request.qps * i / steps_to_request for i in range(1, LOAD_POINTS + 1))


def cost_vs_load(
    request: PlanRequest,
    snapshot: CatalogSnapshot,
    *,
    budget_qps: float | None = None,
    candidates: Candidates | None = None,
    executor: Executor | None = None,
    single_types: bool = True,
) -> LoadCurve:
    """The cheapest USD/hour at each of :func:`load_points`, for the plan's policy and for
    each GPU alone (the GPUs the single-type alternatives consider). ``budget_qps`` is the
    plan's ``max_qps_within_budget`` (it may stretch the x axis); ``candidates`` those already
    built for this request and snapshot. With an ``executor`` the solves of one load point run
    concurrently (HiGHS releases the GIL); the answer is the same either way. Without
    ``single_types`` only the plan's own curve is swept.

    Each point is solved for its cost alone (``cost_only``: no fewest-cards stage), and a
    solve is skipped where a lower bound (:func:`cost_floor`) shows it cannot change the
    answer: a vendor scope whose floor is above what the mixing policy would accept against
    the point's cheapest single type, and, without ``single_types``, a GPU whose floor is not
    below the cheapest single type found so far at that point."""
    built = candidates if candidates is not None else build_candidates(request, snapshot)
    loads = load_points(request, budget_qps)
    if not built.items or request.qps <= 0:
        return LoadCurve(request.qps, request.budget_usd_per_hour, (), 0)
    base = replace(fleet_problem(request, built), budget_usd_per_hour=None)
    factors = tuple(q / request.qps for q in loads)
    # The plan's series follows the mixing policy: the cheapest fleet of each vendor's scope
    # (one scope when vendors may mix), then the single-type fleet unless the mix saves
    # min_mix_savings_percent; so the singles are swept even when not shown.
    singles = _single_series(base)
    scopes = [_Series(v, None) for v in vendor_scopes(base, built, request)]
    for i, factor in enumerate(factors):
        _policy_point(
            request, singles, scopes, i, factor, every_single=single_types, executor=executor
        )
    mixed = [_cheapest_at(scopes, i) for i in range(len(loads))]
    best_single = [_cheapest_at(singles, i) for i in range(len(loads))]
    plan_points = tuple(
        CurvePoint(load, policy_usd_per_hour(request, m, b))
        for load, m, b in zip(loads, mixed, best_single, strict=True)
    )
    series = (
        CostSeries(PLAN_SERIES, None, plan_points),
        *(
            CostSeries(
                x.gpu or "",
                x.gpu,
                tuple(CurvePoint(q, x.costs.get(i)) for i, q in enumerate(loads)),
            )
            for x in singles
            if single_types
        ),
    )
    solves = sum(x.solves for x in (*scopes, *singles))
    return LoadCurve(request.qps, request.budget_usd_per_hour, series, solves)


class _Series:
    """One swept scope (a vendor's options, or one GPU's) and what is known of it: the cost at
    each point solved or reused (``costs``, by point index; ``None``: no fleet), the fleet held
    from the last solve and the largest load factor it carries, and the solves made."""

    def __init__(self, problem: FleetProblem, gpu: str | None) -> None:
        self.problem = problem
        self.gpu = gpu
        self.costs: dict[int, float | None] = {}
        self.held: tuple[float, float] | None = None  # (USD/hour, largest factor it carries)
        self.solves = 0
        self._floor_per_factor = cost_floor(problem)

    def floor(self, factor: float) -> float:
        """A lower bound on the cheapest fleet's USD/hour at ``factor`` times the demand."""
        by_load, by_replicas = self._floor_per_factor
        return max(by_load * factor, by_replicas)

    def holds(self, factor: float) -> bool:
        return self.held is not None and factor <= self.held[1]

    def point(self, i: int, factor: float) -> None:
        """The cheapest cost at point ``i``: the held fleet's while it carries the load (the
        cheapest cost never falls as load grows), else one cost-only solve."""
        if self.held is not None and factor <= self.held[1]:
            self.costs[i] = self.held[0]
            return
        scaled = _scaled(self.problem, factor)
        solution = (
            solve_fleet(scaled, cost_only=True) if self.gpu is None else _single(scaled, self.gpu)
        )
        self.solves += 1
        if not solution.has_fleet:
            self.costs[i] = None
            self.held = None
            return
        self.costs[i] = solution.usd_per_hour
        self.held = (
            (solution.usd_per_hour, _reach(solution, factor))
            if solution.status is SolveStatus.OPTIMAL
            else None
        )


def _single_series(problem: FleetProblem) -> list[_Series]:
    """One series per GPU with an option (sorted by GPU id), each over that GPU's options."""
    return [
        _Series(replace(problem, options=tuple(o for o in problem.options if o.gpu_id == gpu)), gpu)
        for gpu in canonicalize(problem).gpus
    ]


def _policy_point(
    request: PlanRequest,
    singles: list[_Series],
    scopes: list[_Series],
    i: int,
    factor: float,
    *,
    every_single: bool,
    executor: Executor | None,
) -> None:
    """Point ``i`` (``factor`` times the requested load) of the single-type series and of the
    vendor scopes, as far as the plan's policy needs them: every single type when
    ``every_single``, else those whose floor is below the cheapest found so far (cheapest
    floor first); then each vendor scope unless its floor is above what the policy would
    accept against the cheapest single type (``policy_usd_per_hour``; a margin for rounding
    keeps the skip safe)."""
    if every_single:
        _solve_at(singles, i, factor, executor)
    else:
        for one in sorted(singles, key=lambda x: (x.floor(factor), x.gpu or "")):
            best = _cheapest_at(singles, i)
            if best is not None and one.floor(factor) >= best:
                break
            one.point(i, factor)
    best = _cheapest_at(singles, i)
    accept = (1.0 - request.constraints.mixing.min_mix_savings_percent / 100.0) * (1.0 + 1e-9)
    needed = [
        scope
        for scope in scopes
        if best is None or scope.floor(factor) <= best * accept or scope.holds(factor)
    ]
    _solve_at(needed, i, factor, executor)


def _solve_at(series: list[_Series], i: int, factor: float, executor: Executor | None) -> None:
    """Point ``i`` of each of ``series`` (concurrently with an ``executor``)."""
    if executor is None:
        for x in series:
            x.point(i, factor)
    else:
        list(executor.map(lambda x: x.point(i, factor), series))


def cost_floor(problem: FleetProblem) -> tuple[float, float]:
    """Two lower bounds on the USD/hour of any fleet for ``problem`` (cuts of its LP
    relaxation): per unit of load factor, every bucket's requests on the option cheapest per
    request/s of that bucket (``inf`` when no option serves a demanded bucket); and
    ``min_replicas`` replicas at the lowest price per replica. Any fleet pays at least
    ``sum_s D[s] * min_g usd[g] / cap[s, g]`` (its units carry the load) and
    ``m * min_g usd[g] / r[g]`` (its units host the replicas); caps only raise the cost."""
    headroom = 1.0 + problem.headroom
    by_load = 0.0
    for s, bucket in enumerate(problem.buckets):
        if bucket.demand_qps <= 0.0:
            continue
        rates = [
            o.usd_per_hour / o.capacity_qps[s] for o in problem.options if o.capacity_qps[s] > 0
        ]
        if not rates:
            return math.inf, math.inf
        by_load += bucket.demand_qps * headroom * min(rates)
    by_replicas = problem.min_replicas * min(
        (o.usd_per_hour / o.replicas_per_unit for o in problem.options), default=math.inf
    )
    return by_load, by_replicas


def _cheapest_at(series: list[_Series], i: int) -> float | None:
    """The lowest cost known at point ``i`` among ``series`` (``None`` when none has a fleet
    there, or none was needed)."""
    costs = [c for x in series if (c := x.costs.get(i)) is not None]
    return min(costs) if costs else None


def _scaled(problem: FleetProblem, factor: float) -> FleetProblem:
    return replace(
        problem, buckets=tuple(Bucket(b.key, b.demand_qps * factor) for b in problem.buckets)
    )


def _single(problem: FleetProblem, gpu: str) -> FleetSolution:
    try:
        return solve_single_type(problem, gpu, cost_only=True)
    except InvalidInput:  # no option of this GPU serves the scaled load's shapes
        return FleetSolution(status=SolveStatus.INFEASIBLE)


def _reach(solution: FleetSolution, factor: float) -> float:
    """The largest load factor ``solution``'s fleet still carries with its assignment scaled:
    ``factor / max utilisation`` (a little less, for the solver's feasibility tolerance)."""
    busiest = max((u for _, u in solution.utilization), default=0.0)
    if busiest <= 0:
        return math.inf
    return factor / busiest * (1.0 - 1e-9)


# ---- cost vs SLO ----------------------------------------------------------------------------


def cost_vs_slo(request: PlanRequest, snapshot: CatalogSnapshot) -> SloCurve:
    """USD/hour of the plan's policy with the TPOT limit, then the TTFT limit, at each of
    :data:`SLO_FACTORS` times its requested value (budget ignored). Raises
    :class:`InvalidInput` naming ``slo.tpot_ms`` when the request sets neither limit."""
    moved: list[tuple[SloMetric, float]] = []
    if request.slo.tpot_ms is not None:
        moved.append(("tpot_ms", request.slo.tpot_ms))
    if request.slo.ttft_ms is not None:
        moved.append(("ttft_ms", request.slo.ttft_ms))
    if not moved:
        raise InvalidInput(
            "a cost-vs-SLO curve moves the TPOT or TTFT limit: the request sets neither "
            "(give slo.tpot_ms or slo.ttft_ms)",
            field="slo.tpot_ms",
        )
    series: list[CostSeries] = []
    for metric, limit in moved:
        points = []
        for factor in SLO_FACTORS:
            value = limit * factor
            varied = replace(request, slo=replace(request.slo, **{metric: value}))
            built = build_candidates(varied, snapshot)
            cost = None
            if built.items:
                problem = replace(fleet_problem(varied, built), budget_usd_per_hour=None)
                singles = _single_series(problem)
                scopes = [_Series(v, None) for v in vendor_scopes(problem, built, varied)]
                _policy_point(varied, singles, scopes, 0, 1.0, every_single=False, executor=None)
                cost = policy_usd_per_hour(
                    varied, _cheapest_at(scopes, 0), _cheapest_at(singles, 0)
                )
            points.append(CurvePoint(value, cost))
        series.append(CostSeries(metric, None, tuple(points)))
    return SloCurve(tuple(moved), request.slo.percentile, tuple(series))


# ---- per GPU --------------------------------------------------------------------------------


def per_gpu(request: PlanRequest, candidates: Candidates) -> PerGpu:
    """Per GPU, its option with the lowest cost per million output tokens at full load (see
    :class:`GpuEconomics`); options that cannot serve every shape of the mix are skipped."""
    shares = [b.share for b in request.buckets]
    mean_output = math.fsum(b.share * b.output_tokens for b in request.buckets)
    best: dict[str, GpuEconomics] = {}
    for key in sorted(candidates.items):
        candidate = candidates.items[key]
        caps = [c.qps for c in candidate.replica_capacity]
        if mean_output <= 0 or any(
            cap <= 0 and share > 0 for cap, share in zip(caps, shares, strict=True)
        ):
            continue
        per_replica_qps = 1.0 / math.fsum(
            share / cap for cap, share in zip(caps, shares, strict=True) if share > 0
        )
        usd = candidate.option.usd_per_hour / candidate.replicas_per_unit
        per_million = usd / (per_replica_qps * mean_output * 3600.0) * 1e6
        row = GpuEconomics(
            gpu=candidate.option.gpu_id,
            tensor_parallel=candidate.deployment.tensor_parallel,
            provider=candidate.offer.provider,
            instance_type=candidate.offer.instance_type,
            pricing=candidate.offer.pricing,
            usd_per_replica_hour=usd,
            max_qps_per_replica=per_replica_qps,
            usd_per_million_output_tokens=per_million,
        )
        held = best.get(row.gpu)
        if held is None or row.usd_per_million_output_tokens < held.usd_per_million_output_tokens:
            best[row.gpu] = row
    rows = sorted(best.values(), key=lambda r: (r.usd_per_million_output_tokens, r.gpu))
    return PerGpu(tuple(rows))
