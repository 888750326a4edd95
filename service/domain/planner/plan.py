"""The planner: fleet request + catalog snapshot -> the cheapest fleet, explained.

Estimate, then solve, then assemble:

1. **Candidates.** For every allowed GPU, tensor-parallel degree and price offer: the largest
   request rate one replica sustains per request bucket under the SLO (performance model), and
   the price of one billed unit (an instance, or an owned replica). GPUs with no usable option
   become ``rejected`` entries with the reason.
2. **Solve.** One MILP (``service.domain.solver``) picks integer units and assigns each
   bucket's load; the same candidates solved per GPU type give the single-type alternatives;
   a budget adds the most load the budget can carry.
3. **Assemble.** Fleet lines with their load, capacity and predicted latency at the SLO
   percentile, cost per hour, month and million output tokens, and plain-sentence explanations.

Pure: same request and snapshot, same plan.
"""

from __future__ import annotations

import math
from concurrent.futures import Executor
from dataclasses import dataclass
from datetime import datetime

import numpy as np
from scipy.optimize import linprog

from service.domain.catalog import CatalogSnapshot, GpuSpec
from service.domain.perfmodel import (
    Capacity,
    Deployment,
    RequestShape,
    Slo,
    estimate,
    max_qps_under_slo,
)
from service.domain.planner.offers import Offer, offers_for
from service.domain.planner.types import (
    HOURS_PER_MONTH,
    Alternative,
    BucketSummary,
    Fleet,
    FleetLine,
    Plan,
    PlanRequest,
    PlanStatus,
    Pricing,
    Rejection,
    Savings,
)
from service.domain.solver import (
    Bucket,
    FleetOption,
    FleetProblem,
    FleetSolution,
    ReasonCode,
    SolveStatus,
    cheapest_single_type,
    max_qps_within_budget,
    relaxation_savings,
    solve_fleet,
)

_PERCENTILES = (50.0, 90.0, 95.0, 99.0)


@dataclass(frozen=True, slots=True)
class Candidate:
    """One solver option with what the planner needs to turn it back into a fleet line."""

    option: FleetOption
    offer: Offer
    deployment: Deployment
    replicas_per_unit: int
    replica_capacity: tuple[Capacity, ...]


@dataclass(frozen=True, slots=True)
class Candidates:
    items: dict[str, Candidate]
    rejected: dict[str, Rejection]
    considered: tuple[str, ...]


def _option_key(offer: Offer, tp: int) -> str:
    return "|".join(
        (
            offer.gpu_id,
            f"tp{tp}",
            offer.provider,
            offer.region,
            offer.pricing.value,
            offer.instance_type,
        )
    )


def allowed_gpus(request: PlanRequest, snapshot: CatalogSnapshot) -> tuple[GpuSpec, ...]:
    c = request.constraints
    wanted = set(c.gpus) if c.gpus is not None else None
    excluded = set(c.exclude_gpus)
    return tuple(
        g for g in snapshot.gpus if (wanted is None or g.id in wanted) and g.id not in excluded
    )


def build_candidates(request: PlanRequest, snapshot: CatalogSnapshot) -> Candidates:
    """Options per (GPU, tensor-parallel degree, offer) with per-bucket capacities."""
    c = request.constraints
    shapes = tuple(RequestShape(b.prompt_tokens, b.output_tokens) for b in request.buckets)
    items: dict[str, Candidate] = {}
    rejected: dict[str, Rejection] = {}
    gpus = allowed_gpus(request, snapshot)
    for gpu in gpus:
        offers, why = offers_for(gpu, snapshot.prices, c)
        if not offers:
            rejected[gpu.id] = Rejection(gpu.id, "no_price", why or "no price")
            continue
        fit_reason: str | None = None
        slo_reason: str | None = None
        shape_reason: str | None = None
        topology_limited = False
        for tp in sorted(set(c.tensor_parallel)):
            if tp > gpu.nvlink_domain and not c.allow_pcie_tensor_parallel:
                topology_limited = True
                continue
            dep = Deployment(
                gpu=gpu,
                tensor_parallel=tp,
                precision=request.precision,
                kv_precision=request.kv_precision,
                engine=request.engine,
                allow_pcie_tensor_parallel=c.allow_pcie_tensor_parallel,
            )
            caps = tuple(max_qps_under_slo(request.model.arch, dep, s, request.slo) for s in shapes)
            if all(cap.qps <= 0 for cap in caps):
                reason = caps[0].reason or f"cannot serve at tensor_parallel={tp}"
                if caps[0].limited_by == "does_not_fit":
                    fit_reason = f"tensor_parallel={tp}: {reason}"
                else:
                    slo_reason = f"tensor_parallel={tp}: {reason}"
                continue
            units = [(offer, offer.unit(tp)) for offer in offers]
            usable = [(o, u) for o, u in units if u is not None]
            if not usable:
                largest = max(o.cards_per_unit for o in offers)
                shape_reason = (
                    f"tensor_parallel={tp} needs {tp} cards in one instance; the allowed offers "
                    f"have at most {largest}"
                )
                continue
            for offer, unit in usable:
                cards, replicas, usd = unit
                key = _option_key(offer, tp)
                items[key] = Candidate(
                    option=FleetOption(
                        key=key,
                        gpu_id=gpu.id,
                        tensor_parallel=cards,
                        usd_per_hour=usd,
                        capacity_qps=tuple(cap.qps * replicas for cap in caps),
                        replicas_per_unit=replicas,
                    ),
                    offer=offer,
                    deployment=dep,
                    replicas_per_unit=replicas,
                    replica_capacity=caps,
                )
        if not any(k.startswith(gpu.id + "|") for k in items):
            rejected[gpu.id] = _rejection(
                gpu, slo_reason, shape_reason, fit_reason, topology_limited
            )
    return Candidates(items, rejected, tuple(g.id for g in gpus))


def _rejection(
    gpu: GpuSpec,
    slo_reason: str | None,
    shape_reason: str | None,
    fit_reason: str | None,
    topology_limited: bool,
) -> Rejection:
    """The most useful reason a GPU has no option: an SLO miss beats an instance-shape problem
    beats not fitting in memory (at the largest tensor-parallel degree the topology allows)."""
    if slo_reason is not None:
        return Rejection(gpu.id, "cannot_meet_slo", slo_reason)
    if shape_reason is not None:
        return Rejection(gpu.id, "instance_too_small", shape_reason)
    topology = (
        f"; larger tensor-parallel groups need NVLink (domain: {gpu.nvlink_domain} "
        f"card{'s' if gpu.nvlink_domain > 1 else ''}) unless allow_pcie_tensor_parallel is set"
        if topology_limited
        else ""
    )
    if fit_reason is None:
        return Rejection(
            gpu.id, "does_not_fit", "no allowed tensor-parallel degree is possible" + topology
        )
    return Rejection(gpu.id, "does_not_fit", fit_reason + topology)


def fleet_problem(request: PlanRequest, candidates: Candidates) -> FleetProblem:
    c = request.constraints
    return FleetProblem(
        buckets=tuple(Bucket(b.key, request.demand_qps(b)) for b in request.buckets),
        options=tuple(candidates.items[k].option for k in sorted(candidates.items)),
        headroom=c.headroom,
        min_replicas=c.min_replicas,
        max_cards=c.max_cards,
        allow_mix=c.allow_mix,
        budget_usd_per_hour=request.budget_usd_per_hour,
        time_limit_s=request.time_limit_s,
    )


def plan(
    request: PlanRequest, snapshot: CatalogSnapshot, *, executor: Executor | None = None
) -> Plan:
    """Solve one fleet request against one catalog snapshot.

    The main solve, the single-type alternatives and the budget solve are independent; with an
    ``executor`` they run concurrently (HiGHS releases the GIL), else one after the other. The
    answer is the same either way.
    """
    candidates = build_candidates(request, snapshot)
    buckets = tuple(
        BucketSummary(b.key, b.share, b.prompt_tokens, b.output_tokens, request.demand_qps(b))
        for b in request.buckets
    )
    prices_as_of = request.as_of or _newest_observation(snapshot)
    if not candidates.items:
        return Plan(
            status=PlanStatus.INFEASIBLE,
            fleet=None,
            usd_per_million_output_tokens=None,
            alternatives=(),
            savings_vs_best_single_type=None,
            rejected=_sorted_rejections(candidates.rejected),
            max_qps_within_budget=0.0 if request.budget_usd_per_hour is not None else None,
            explanation=(_no_candidates_sentence(request, candidates),),
            assumptions=_assumptions(request, candidates, None),
            buckets=buckets,
            prices_as_of=prices_as_of,
        )

    problem = fleet_problem(request, candidates)
    if executor is not None:
        singles_job = executor.submit(_single_type_fleets, request, candidates, problem)
        budget_job = (
            executor.submit(max_qps_within_budget, problem)
            if request.budget_usd_per_hour is not None
            else None
        )
        solution = solve_fleet(problem)
        fleet = _fleet(request, candidates, solution) if solution.has_fleet else None
        singles, alternatives = singles_job.result()
        budget_qps = budget_job.result() if budget_job is not None else None
        if solution.max_qps_within_budget is not None:
            budget_qps = solution.max_qps_within_budget
    else:
        solution = solve_fleet(problem)
        fleet = _fleet(request, candidates, solution) if solution.has_fleet else None
        singles, alternatives = _single_type_fleets(request, candidates, problem)
        budget_qps = (
            max_qps_within_budget(problem) if request.budget_usd_per_hour is not None else None
        )
    rejected = dict(candidates.rejected)
    in_fleet = {line.gpu for line in fleet.lines} if fleet else set()
    for gpu, sol in singles.items():
        if not sol.has_fleet and gpu not in in_fleet:
            rejected[gpu] = _single_type_rejection(gpu, sol, request, candidates)
    savings = None
    if fleet is not None and alternatives:
        best = alternatives[0]
        delta = best.fleet.usd_per_hour - fleet.usd_per_hour
        savings = Savings(
            versus_gpu=best.gpu,
            usd_per_hour=max(delta, 0.0),
            percent=max(delta, 0.0) / best.fleet.usd_per_hour * 100
            if best.fleet.usd_per_hour
            else 0.0,
        )
    status = PlanStatus(solution.status.value)
    return Plan(
        status=status,
        fleet=fleet,
        usd_per_million_output_tokens=_usd_per_million_tokens(request, fleet),
        alternatives=alternatives,
        savings_vs_best_single_type=savings,
        rejected=_sorted_rejections(rejected),
        max_qps_within_budget=budget_qps,
        explanation=_explain(
            request, candidates, solution, fleet, alternatives, savings, budget_qps, problem
        ),
        assumptions=_assumptions(request, candidates, solution if solution.has_fleet else None),
        buckets=buckets,
        prices_as_of=prices_as_of,
    )


# ---- assembly -----------------------------------------------------------------------------


def _single_type_fleets(
    request: PlanRequest, candidates: Candidates, problem: FleetProblem
) -> tuple[dict[str, FleetSolution], tuple[Alternative, ...]]:
    """The cheapest fleet of each GPU type alone, solved and assembled (sorted by cost)."""
    singles = cheapest_single_type(problem)
    alternatives = tuple(
        sorted(
            (
                Alternative(gpu, _fleet(request, candidates, sol, with_capacity=False))
                for gpu, sol in singles.items()
                if sol.has_fleet
            ),
            key=lambda a: (round(a.fleet.usd_per_hour, 6), a.gpu),
        )
    )
    return singles, alternatives


def _fleet(
    request: PlanRequest,
    candidates: Candidates,
    solution: FleetSolution,
    *,
    with_capacity: bool = True,
) -> Fleet:
    """Fleet lines of a solution; ``with_capacity`` adds the fleet-wide capacity (one LP)."""
    headroom = 1.0 + request.constraints.headroom
    served: dict[str, dict[str, float]] = {}
    for bucket_key, option_key, rate in solution.served_qps:
        served.setdefault(option_key, {})[bucket_key] = rate / headroom
    bucket_index = {b.key: i for i, b in enumerate(request.buckets)}
    lines = []
    for option_key, units in solution.replicas:
        cand = candidates.items[option_key]
        per_bucket = served.get(option_key, {})
        replicas = units * cand.replicas_per_unit
        time_share = sum(
            rate / cand.option.capacity_qps[bucket_index[b]] for b, rate in per_bucket.items()
        )
        utilization = time_share / units if units else 0.0
        assigned = math.fsum(per_bucket.values())
        if utilization > 0:
            capacity = assigned / utilization
        else:
            capacity = units * max(cand.option.capacity_qps)
        ttft, tpot = _line_latency(request, cand, per_bucket, utilization, bucket_index)
        lines.append(
            FleetLine(
                gpu=cand.option.gpu_id,
                provider=cand.offer.provider,
                region=cand.offer.region,
                instance_type=cand.offer.instance_type,
                pricing=cand.offer.pricing.value,
                tensor_parallel=cand.deployment.tensor_parallel,
                replicas=replicas,
                instances=units if cand.offer.cards_per_unit else 0,
                cards=units * cand.option.tensor_parallel,
                usd_per_hour=units * cand.option.usd_per_hour,
                qps_capacity=capacity,
                assigned_qps=assigned,
                ttft_ms=ttft,
                tpot_ms=tpot,
                utilization=utilization,
                buckets=tuple(sorted(per_bucket.items())),
            )
        )
    lines.sort(key=lambda line: (-line.usd_per_hour, line.gpu, line.provider, line.instance_type))
    return Fleet(
        lines=tuple(lines),
        usd_per_hour=math.fsum(line.usd_per_hour for line in lines),
        total_cards=sum(line.cards for line in lines),
        qps_capacity=_fleet_capacity(request, candidates, solution) if with_capacity else None,
    )


def _line_latency(
    request: PlanRequest,
    cand: Candidate,
    per_bucket: dict[str, float],
    utilization: float,
    bucket_index: dict[str, int],
) -> tuple[float, float]:
    """Worst TTFT and TPOT at the SLO percentile over the shapes the line serves.

    A replica serving several shapes time-shares; each shape is evaluated at the rate that uses
    the same share of its capacity (``utilization * capacity``), the load the line runs at.
    """
    worst_ttft = 0.0
    worst_tpot = 0.0
    for bucket_key in per_bucket or {request.buckets[0].key: 0.0}:
        i = bucket_index[bucket_key]
        shape = RequestShape(request.buckets[i].prompt_tokens, request.buckets[i].output_tokens)
        rate = max(utilization, 1e-6) * cand.replica_capacity[i].qps
        ttft, tpot = latency_at(request, cand.deployment, shape, rate, request.slo)
        worst_ttft = max(worst_ttft, ttft)
        worst_tpot = max(worst_tpot, tpot)
    return worst_ttft, worst_tpot


def latency_at(
    request: PlanRequest, dep: Deployment, shape: RequestShape, qps: float, slo: Slo
) -> tuple[float, float]:
    """TTFT and TPOT (ms) at the SLO percentile for one replica under ``qps``."""
    est = estimate(request.model.arch, dep, shape, qps=qps)
    lat = est.latency
    if lat is None:
        return est.ttft_ms, est.tpot_ms
    table = {
        50.0: (lat.ttft_p50_ms, lat.tpot_p50_ms),
        90.0: (lat.ttft_p90_ms, lat.tpot_p90_ms),
        95.0: (lat.ttft_p95_ms, lat.tpot_p95_ms),
        99.0: (lat.ttft_p99_ms, lat.tpot_p99_ms),
    }
    for p in _PERCENTILES:
        if slo.percentile <= p:
            return table[p]
    return table[99.0]


def _fleet_capacity(request: PlanRequest, candidates: Candidates, solution: FleetSolution) -> float:
    """The most total QPS (same bucket mix) the chosen units carry within the SLO: an LP over
    the assignment with the unit counts fixed (maximise the scale ``lam`` of the demand)."""
    keys = [k for k, _ in solution.replicas]
    if not keys:
        return 0.0
    units = dict(solution.replicas)
    shares = [b.share for b in request.buckets]
    if len(keys) == 1:
        # One line serves every bucket: its time budget bounds the mix, lam * sum(share/cap) <= x.
        caps = candidates.items[keys[0]].option.capacity_qps
        if any(share > 0 and cap <= 0 for share, cap in zip(shares, caps, strict=True)):
            return 0.0
        load = math.fsum(share / cap for share, cap in zip(shares, caps, strict=True) if share > 0)
        return units[keys[0]] / load if load > 0 else 0.0
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
        caps = candidates.items[key].option.capacity_qps
        for s in range(n_b):
            if caps[s] > 0:
                a_ub[g, s * n_o + g] = 1.0 / caps[s]
            else:
                bounds[s * n_o + g] = (0.0, 0.0)
    b_ub = np.array([float(units[k]) for k in keys])
    result = linprog(
        cost, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=np.zeros(n_b), bounds=bounds, method="highs"
    )
    return float(result.x[-1]) if result.status == 0 else 0.0


def _usd_per_million_tokens(request: PlanRequest, fleet: Fleet | None) -> float | None:
    if fleet is None:
        return None
    tokens_per_hour = 3600.0 * math.fsum(
        request.demand_qps(b) * b.output_tokens for b in request.buckets
    )
    return fleet.usd_per_hour / tokens_per_hour * 1e6 if tokens_per_hour > 0 else None


def _newest_observation(snapshot: CatalogSnapshot) -> datetime | None:
    return max((p.observed_at for p in snapshot.prices), default=None)


def _sorted_rejections(rejected: dict[str, Rejection]) -> tuple[Rejection, ...]:
    return tuple(rejected[k] for k in sorted(rejected))


def _single_type_rejection(
    gpu: str, sol: FleetSolution, request: PlanRequest, candidates: Candidates
) -> Rejection:
    for reason in sol.reasons:
        if reason.code is ReasonCode.GPU_CANNOT_SERVE:
            names = ", ".join(_bucket_words(request, b) for b in reason.buckets)
            detail = _capacity_reason(candidates, gpu, reason.buckets, request)
            return Rejection(gpu, "cannot_serve_bucket", f"cannot serve {names}{detail}")
        if reason.code is ReasonCode.MAX_CARDS:
            cap = dict(request.constraints.max_cards).get(gpu)
            short = f"{reason.shortfall:.0f} more cards" if reason.shortfall else "more cards"
            return Rejection(
                gpu, "over_availability_cap", f"needs {short} than max_cards={cap} allows"
            )
    text = "; ".join(r.message or r.label for r in sol.reasons) or "no feasible fleet"
    return Rejection(gpu, str(sol.reasons[0].code) if sol.reasons else "infeasible", text)


def _capacity_reason(
    candidates: Candidates, gpu: str, bucket_keys: tuple[str, ...], request: PlanRequest
) -> str:
    index = {b.key: i for i, b in enumerate(request.buckets)}
    for cand in candidates.items.values():
        if cand.option.gpu_id != gpu:
            continue
        for key in bucket_keys:
            cap = cand.replica_capacity[index[key]]
            if cap.reason:
                return f": {cap.reason}"
    return ""


def _bucket_words(request: PlanRequest, key: str) -> str:
    for b in request.buckets:
        if b.key == key:
            return f"bucket {key} ({b.prompt_tokens} in / {b.output_tokens} out)"
    return f"bucket {key}"


# ---- words --------------------------------------------------------------------------------


def _money(usd: float) -> str:
    return f"${usd:,.2f}"


def _line_words(line: FleetLine) -> str:
    where = f"{line.provider} {line.region} {line.instance_type}".strip()
    tp = f" (tensor_parallel={line.tensor_parallel})" if line.tensor_parallel > 1 else ""
    return f"{line.replicas} x {line.gpu}{tp} on {where}"


def _explain(
    request: PlanRequest,
    candidates: Candidates,
    solution: FleetSolution,
    fleet: Fleet | None,
    alternatives: tuple[Alternative, ...],
    savings: Savings | None,
    budget_qps: float | None,
    problem: FleetProblem,
) -> tuple[str, ...]:
    c = request.constraints
    slo = request.slo
    limits = [
        f"{name} p{slo.percentile:g} <= {value:g} ms"
        for name, value in (("TTFT", slo.ttft_ms), ("TPOT", slo.tpot_ms), ("E2E", slo.e2e_ms))
        if value is not None
    ]
    sentences: list[str] = []
    if fleet is None:
        sentences.append(
            "No fleet meets the demand: "
            + "; ".join(r.message or r.label for r in solution.reasons)
            + "."
        )
        return tuple(sentences)
    load = f"{request.qps:g} req/s"
    if c.headroom:
        load += f" plus {c.headroom * 100:g}% headroom"
    sentences.append(
        f"Cheapest fleet for {load} within {', '.join(limits) or 'no latency limit'}: "
        + "; ".join(_line_words(line) for line in fleet.lines)
        + f", {_money(fleet.usd_per_hour)}/hour ({_money(fleet.usd_per_month)}/month)."
    )
    index = {b.key: i for i, b in enumerate(request.buckets)}
    for line in fleet.lines:
        for bucket_key, _ in line.buckets:
            for cand in candidates.items.values():
                if (
                    cand.option.gpu_id == line.gpu
                    and cand.deployment.tensor_parallel == line.tensor_parallel
                    and cand.offer.provider == line.provider
                    and cand.offer.instance_type == line.instance_type
                ):
                    cap = cand.replica_capacity[index[bucket_key]]
                    tp = (
                        f" tensor_parallel={line.tensor_parallel}"
                        if line.tensor_parallel > 1
                        else ""
                    )
                    sentences.append(
                        f"Each {line.gpu}{tp} replica carries at most {cap.qps:.3g} req/s of "
                        f"{_bucket_words(request, bucket_key)}; the binding limit is "
                        f"{_limit_words(cap.limited_by, slo)}."
                    )
                    break
    sentences.extend(_constraint_costs(request, problem, solution))
    if solution.status is SolveStatus.OVER_BUDGET and request.budget_usd_per_hour is not None:
        sentences.append(
            f"The cheapest fleet costs {_money(fleet.usd_per_hour)}/hour, over the budget of "
            f"{_money(request.budget_usd_per_hour)}/hour; a fleet within budget carries at most "
            f"{(budget_qps or 0):.3g} req/s of this request mix."
        )
    elif budget_qps is not None and request.budget_usd_per_hour is not None:
        sentences.append(
            f"Within the budget of {_money(request.budget_usd_per_hour)}/hour the load could grow "
            f"to {budget_qps:.3g} req/s of this mix."
        )
    if solution.status is SolveStatus.TIME_LIMIT:
        sentences.append(
            f"The solver stopped at its {request.time_limit_s:g} s time limit; this is the best "
            f"fleet found (within {solution.mip_gap * 100:.2g}% of optimal)."
        )
    if savings is not None and savings.usd_per_hour > 0.005:
        sentences.append(
            f"Mixing GPU types saves {_money(savings.usd_per_hour)}/hour ({savings.percent:.1f}%) "
            f"against the cheapest single-type fleet ({savings.versus_gpu})."
        )
    elif alternatives and not c.allow_mix:
        sentences.append("allow_mix=false: the fleet uses one GPU type.")
    return tuple(sentences)


def _constraint_costs(
    request: PlanRequest, problem: FleetProblem, solution: FleetSolution
) -> list[str]:
    """What each availability cap and the redundancy floor cost, priced by re-solving without
    it (one MILP each); constraints that cost nothing are not mentioned.

    Caps are priced even when not tight (a cap can push the fleet off a GPU entirely); the
    redundancy floor only when tight, since a slack floor cannot cost anything."""
    c = request.constraints
    labels = tuple(f"max_cards:{gpu}" for gpu, _ in c.max_cards)
    if c.min_replicas > 1 and "min_replicas" in solution.binding:
        labels += ("min_replicas",)
    if not labels or not solution.has_fleet:
        return []
    out = []
    for label, saved in relaxation_savings(problem, solution, labels):
        if saved <= 0.005:
            continue
        kind, _, subject = label.partition(":")
        if kind == "max_cards":
            cap = dict(c.max_cards)[subject]
            out.append(
                f"The availability cap of {cap} {subject} cards adds {_money(saved)}/hour: "
                "without it the fleet would use more of them."
            )
        elif kind == "min_replicas":
            out.append(
                f"min_replicas={c.min_replicas} adds {_money(saved)}/hour over what the load "
                "alone needs."
            )
    return out


def _limit_words(limited_by: str, slo: Slo) -> str:
    words = {
        "ttft": f"TTFT p{slo.percentile:g} <= {slo.ttft_ms} ms",
        "tpot": f"TPOT p{slo.percentile:g} <= {slo.tpot_ms} ms",
        "e2e": f"end-to-end p{slo.percentile:g} <= {slo.e2e_ms} ms",
        "kv_capacity": "KV-cache memory",
        "engine_batch_cap": "the engine's batch limit",
        "token_budget": "the engine's per-step token budget",
    }
    return words.get(limited_by, limited_by.replace("_", " "))


def _no_candidates_sentence(request: PlanRequest, candidates: Candidates) -> str:
    if not candidates.considered:
        return "No GPU is allowed by the request's gpus/exclude_gpus constraints."
    return (
        f"None of the {len(candidates.considered)} allowed GPUs can serve this model and SLO "
        "with the allowed prices; see rejected for the reason per GPU."
    )


def _assumptions(
    request: PlanRequest, candidates: Candidates, solution: FleetSolution | None
) -> tuple[str, ...]:
    """General planning assumptions plus the performance model's, for each deployment in the
    chosen fleet (or the first candidate when there is no fleet)."""
    c = request.constraints
    out: list[str] = list(request.model.assumptions)
    out.append(
        f"Latency limits hold at p{request.slo.percentile:g} under Poisson arrivals; capacities "
        "come from the calibrated performance model (see /v1/estimate)."
    )
    if c.headroom:
        out.append(f"Capacity is planned for {1 + c.headroom:g} x the target load (headroom).")
    out.append(
        "A replica's cards sit in one instance and instances are billed whole; a month is "
        f"{HOURS_PER_MONTH:g} hours."
    )
    if c.pricing is Pricing.OWNED:
        o = c.owned
        out.append(
            f"Owned cards: purchase price amortised over {o.amortization_months:g} months plus "
            f"power at TDP x PUE {o.pue:g} x {o.usd_per_kwh:g} USD/kWh."
        )
    keys = (
        [k for k, _ in solution.replicas] if solution is not None else sorted(candidates.items)[:1]
    )
    shape = RequestShape(request.buckets[0].prompt_tokens, request.buckets[0].output_tokens)
    deployments = dict.fromkeys(candidates.items[k].deployment for k in keys)
    for dep in deployments:
        for text in estimate(request.model.arch, dep, shape).assumptions:
            tag = f"{dep.gpu.id} tensor_parallel={dep.tensor_parallel}: "
            out.append(text if len(deployments) == 1 else tag + text)
    return tuple(dict.fromkeys(out))
