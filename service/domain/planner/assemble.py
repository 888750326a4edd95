"""Assembly: solver results back into fleet lines (load, capacity, utilisation, latency at
the SLO percentile, cost) and fleet-wide totals."""

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import sparse

from service.domain.perfmodel import (
    Deployment,
    RequestShape,
    Slo,
    percentiles_at_rates,
)
from service.domain.planner.candidates import Candidate, Candidates
from service.domain.planner.request import PlanRequest
from service.domain.planner.result import Alternative, Fleet, FleetLine
from service.domain.providers import provider_kind
from service.domain.solver import FleetSolution
from service.domain.solver.highs import MilpModel, Outcome, solve_milp

_PERCENTILES = (50.0, 90.0, 95.0, 99.0)
# The fleet-capacity LP is tiny (buckets x lines); HiGHS solves it in well under a millisecond.
_LP_TIME_LIMIT_S = 5.0


def single_type_alternatives(
    request: PlanRequest, candidates: Candidates, singles: Mapping[str, FleetSolution]
) -> tuple[Alternative, ...]:
    """The single-type fleets (the cheapest fleet of each GPU type alone,
    :func:`~service.domain.solver.cheapest_single_type`) that exist, assembled and sorted by
    cost (:func:`by_cost`)."""
    found = [(gpu, sol) for gpu, sol in singles.items() if sol.has_fleet]
    fleets = assemble_fleets(request, candidates, [sol for _, sol in found], with_capacity=False)
    return by_cost(Alternative(gpu, fleet) for (gpu, _), fleet in zip(found, fleets, strict=True))


def by_cost(alternatives: Iterable[Alternative]) -> tuple[Alternative, ...]:
    """Single-type alternatives, cheapest first (ties: GPU id)."""
    return tuple(sorted(alternatives, key=lambda a: (round(a.fleet.usd_per_hour, 6), a.gpu)))


def assemble_fleet(
    request: PlanRequest,
    candidates: Candidates,
    solution: FleetSolution,
    *,
    with_capacity: bool = True,
) -> Fleet:
    """Fleet lines of a solution; ``with_capacity`` adds the fleet-wide capacity (one LP)."""
    return assemble_fleets(request, candidates, [solution], with_capacity=with_capacity)[0]


@dataclass(frozen=True, slots=True)
class _Draft:
    """One fleet line before its latencies: the option, its units and the load it carries
    (requests/s per bucket key, after headroom), the share of its time that load takes."""

    cand: Candidate
    units: int
    per_bucket: dict[str, float]
    utilization: float


def assemble_fleets(
    request: PlanRequest,
    candidates: Candidates,
    solutions: Sequence[FleetSolution],
    *,
    with_capacity: bool = True,
) -> list[Fleet]:
    """:func:`assemble_fleet` of each solution; the latencies of all their lines are solved
    together (``perfmodel.percentiles_at_rates``)."""
    drafts = [_drafts(request, candidates, sol) for sol in solutions]
    loads = [_line_loads(request, d) for fleet in drafts for d in fleet]
    flat = [load for line in loads for load in line]
    latencies = iter(
        percentiles_at_rates(request.model.arch, flat, latency_percentile(request.slo))
    )
    worst = []
    for line in loads:
        got = [next(latencies) for _ in line]
        worst.append((max(0.0, *(a for a, _ in got)), max(0.0, *(b for _, b in got))))
    at = iter(worst)
    return [
        _fleet(request, candidates, sol, fleet, [next(at) for _ in fleet], with_capacity)
        for sol, fleet in zip(solutions, drafts, strict=True)
    ]


def _drafts(request: PlanRequest, candidates: Candidates, solution: FleetSolution) -> list[_Draft]:
    headroom = 1.0 + (request.constraints.headroom or 0.0)
    served: dict[str, dict[str, float]] = {}
    for bucket_key, option_key, rate in solution.served_qps:
        if rate > 0:  # a line listed at 0 req/s for a shape carries none of it
            served.setdefault(option_key, {})[bucket_key] = rate / headroom
    bucket_index = {b.key: i for i, b in enumerate(request.buckets)}
    drafts = []
    for option_key, units in solution.units:
        cand = candidates.items[option_key]
        per_bucket = served.get(option_key, {})
        time_share = sum(
            rate / cand.model_capacity_qps(bucket_index[b]) for b, rate in per_bucket.items()
        )
        drafts.append(_Draft(cand, units, per_bucket, time_share / units if units else 0.0))
    return drafts


def _line_loads(
    request: PlanRequest, draft: _Draft
) -> list[tuple[Deployment, RequestShape, float]]:
    """The (deployment, shape, rate) of one replica of a line for each shape it serves.

    A replica serving several shapes time-shares; each shape is evaluated at the rate that uses
    the same share of its capacity (``utilization * capacity``), the load the line runs at. A
    shape the replica cannot serve (no capacity) is one the line carries none of, whatever the
    solution lists for it (a spread fleet's lines list every shape, some at 0); a line that
    carries no load is evaluated idle on the first shape it can serve.
    """
    index = {b.key: i for i, b in enumerate(request.buckets)}
    capacity = draft.cand.replica_capacity
    servable = [i for i in range(len(request.buckets)) if capacity[i].qps > 0]
    served = [index[k] for k in draft.per_bucket if capacity[index[k]].qps > 0]
    loads = []
    for i in served or servable[:1]:
        shape = RequestShape(request.buckets[i].prompt_tokens, request.buckets[i].output_tokens)
        rate = max(draft.utilization, 1e-6) * capacity[i].qps
        loads.append((draft.cand.deployment, shape, rate))
    return loads


def _fleet(
    request: PlanRequest,
    candidates: Candidates,
    solution: FleetSolution,
    drafts: list[_Draft],
    latencies: list[tuple[float, float]],
    with_capacity: bool,
) -> Fleet:
    lines = []
    for d, (ttft, tpot) in zip(drafts, latencies, strict=True):
        cand, units = d.cand, d.units
        assigned = math.fsum(d.per_bucket.values())
        if d.utilization > 0:
            capacity = assigned / d.utilization
        else:
            capacity = units * max(cand.model_capacity_qps(i) for i in range(len(request.buckets)))
        lines.append(
            FleetLine(
                gpu=cand.option.gpu_id,
                provider=cand.offer.provider,
                region=cand.offer.region,
                instance_type=cand.offer.instance_type,
                pricing=cand.offer.pricing,
                tensor_parallel=cand.deployment.tensor_parallel,
                replicas=units * cand.replicas_per_unit,
                instances=units if cand.offer.cards_per_instance else 0,
                cards=units * cand.option.cards_per_unit,
                usd_per_hour=units * cand.option.usd_per_hour,
                qps_capacity=capacity,
                assigned_qps=assigned,
                ttft_ms=ttft,
                tpot_ms=tpot,
                utilization=d.utilization,
                buckets=tuple(sorted(d.per_bucket.items())),
                provider_kind=provider_kind(cand.offer.provider, cand.offer.instance_type),
                price_observed_at=cand.offer.observed_at,
            )
        )
    lines.sort(key=lambda line: (-line.usd_per_hour, line.gpu, line.provider, line.instance_type))
    return Fleet(
        lines=tuple(lines),
        usd_per_hour=math.fsum(line.usd_per_hour for line in lines),
        total_cards=sum(line.cards for line in lines),
        qps_capacity=fleet_capacity(request, candidates, solution) if with_capacity else None,
    )


def latency_percentile(slo: Slo) -> float:
    """The percentile a line's latencies are reported at: the SLO's, rounded up to one of
    50, 90, 95 and 99 (99 above that)."""
    for p in _PERCENTILES:
        if slo.percentile <= p:
            return p
    return _PERCENTILES[-1]


def _model_caps(cand: Candidate) -> tuple[float, ...]:
    return tuple(cand.model_capacity_qps(i) for i in range(len(cand.replica_capacity)))


def _mix_capacity(shares: list[float], caps: tuple[float, ...]) -> float:
    """Requests/s of the mix one unit carries serving every shape (0 if it cannot serve one)."""
    if any(share > 0 and cap <= 0 for share, cap in zip(shares, caps, strict=True)):
        return 0.0
    load = math.fsum(share / cap for share, cap in zip(shares, caps, strict=True) if share > 0)
    return 1.0 / load if load > 0 else 0.0


def fleet_capacity(request: PlanRequest, candidates: Candidates, solution: FleetSolution) -> float:
    """The most total QPS (same bucket mix) the chosen units carry within the SLO by the model
    (no headroom): an LP over the assignment with the unit counts fixed (maximise the scale
    ``lam`` of the demand). With ``shared`` routing every line serves the whole mix, so the
    lines' mix capacities add up (no LP)."""
    keys = [k for k, _ in solution.units]
    if not keys:
        return 0.0
    units = dict(solution.units)
    shares = [b.share for b in request.buckets]
    if len(keys) == 1 or request.routing == "shared":
        # Each line serves every bucket: its time budget bounds the mix, lam * sum(share/cap) <= x.
        return math.fsum(
            units[key] * _mix_capacity(shares, _model_caps(candidates.items[key])) for key in keys
        )
    n_b, n_o = len(request.buckets), len(keys)
    # Variables: z[s, g] (requests/s of bucket s on option g), then lam (total requests/s).
    n = n_b * n_o + 1
    cost = np.zeros(n)
    cost[-1] = -1.0
    a_eq = np.zeros((n_b, n))
    for s in range(n_b):
        a_eq[s, s * n_o : (s + 1) * n_o] = 1.0
        a_eq[s, -1] = -shares[s]
    a_ub = np.zeros((n_o, n))
    bounds: list[tuple[float, float | None]] = [(0.0, None)] * n
    for g, key in enumerate(keys):
        caps = _model_caps(candidates.items[key])
        for s in range(n_b):
            if caps[s] > 0:
                a_ub[g, s * n_o + g] = 1.0 / caps[s]
            else:
                bounds[s * n_o + g] = (0.0, 0.0)
    model = MilpModel(
        c=cost,
        a=sparse.csc_array(np.vstack([a_eq, a_ub])),
        row_lower=np.concatenate([np.zeros(n_b), np.full(n_o, -np.inf)]),
        row_upper=np.concatenate([np.zeros(n_b), [float(units[k]) for k in keys]]),
        col_lower=np.zeros(n),
        col_upper=np.array([np.inf if hi is None else hi for _, hi in bounds]),
        integrality=np.zeros(n, dtype=np.uint8),
    )
    result = solve_milp(model, time_limit_s=_LP_TIME_LIMIT_S)
    if result.outcome is not Outcome.OPTIMAL or result.x is None:
        return 0.0
    return float(result.x[-1])


def usd_per_million_tokens(request: PlanRequest, fleet: Fleet | None) -> float | None:
    if fleet is None:
        return None
    tokens_per_hour = 3600.0 * math.fsum(
        request.demand_qps(b) * b.output_tokens for b in request.buckets
    )
    return fleet.usd_per_hour / tokens_per_hour * 1e6 if tokens_per_hour > 0 else None
