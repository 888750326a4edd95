"""The planner: fleet request + catalog snapshot -> the cheapest fleet, explained.

Estimate, then solve, then assemble:

1. **Candidates.** For every allowed GPU, tensor-parallel degree and price offer: the largest
   request rate one replica sustains per request bucket under the SLO (performance model), and
   the price of one billed unit (an instance, or an owned replica). GPUs with no usable option
   become ``rejected`` entries with the reason.
2. **Solve.** One MILP (``service.domain.solver``) picks integer units and assigns each
   bucket's load, within ``max_gpu_types``; the same candidates solved per GPU type give the
   single-type alternatives; a budget adds the most load the budget can carry. The mixing
   policy (``mixing``) then applies the one-vendor rule and the savings threshold.
3. **Assemble.** Fleet lines with their load, capacity and predicted latency at the SLO
   percentile, cost per hour, month and million output tokens, and plain-sentence explanations.
4. **Relax** (infeasible or over budget only). The cheapest changes to the request that make
   it feasible, each planned like a request (``relax``), and each rejected GPU's latency floor.

Pure: same request and snapshot, same plan.
"""

from __future__ import annotations

from concurrent.futures import BrokenExecutor, Executor, Future
from dataclasses import replace
from datetime import datetime

from service.domain.catalog import CatalogSnapshot
from service.domain.planner.aside import Aside, solve_aside
from service.domain.planner.assemble import (
    assemble_fleet,
    fleet_capacity,
    single_type_alternatives,
    usd_per_million_tokens,
)
from service.domain.planner.candidates import Candidates, build_candidates, fleet_problem
from service.domain.planner.explain import (
    assumptions,
    explain,
    host_not_priced_sentences,
    no_candidates_sentence,
    priced_constraints,
    single_type_rejection,
    stale_price_sentences,
)
from service.domain.planner.mixing import (
    decide,
    decision_sentence,
    one_vendor_solve,
    scope_vendors,
)
from service.domain.planner.redundancy import redundancy, redundancy_sentence
from service.domain.planner.relax import latency_floors, relaxations, with_floors
from service.domain.planner.request import PlanRequest
from service.domain.planner.result import (
    Alternative,
    BucketSummary,
    Fleet,
    Plan,
    Rejection,
    Savings,
    plan_status,
)
from service.domain.planner.routing import routing, routing_sentence
from service.domain.solver import (
    FleetSolution,
    ReasonCode,
    SolveStatus,
    max_qps_within_budget,
)


def plan(
    request: PlanRequest,
    snapshot: CatalogSnapshot,
    *,
    executor: Executor | None = None,
    relax: bool = True,
) -> Plan:
    """Solve one fleet request against one catalog snapshot.

    The main solve (with its budget solve) is independent of the single-type alternatives
    and of the what-if re-solves that price the request's constraints
    (:func:`~service.domain.planner.aside.solve_aside`); with an ``executor`` (threads or
    processes) those run on one of its workers while this thread runs the main solve, else
    all run one after the other. The replica floors' what-if is priced by the main solve
    itself, mostly without a second solve
    (:func:`~service.domain.solver.whatif.solve_fleet_pricing_min_replicas`). The answer is
    the same either way; a broken executor only makes this thread do the helper's share.
    An infeasible or over-budget plan also gets its relaxations and its rejections their
    latency floors (``relax``; each relaxation is planned with ``relax=False``).
    """
    result, binding = _solve(request, snapshot, executor)
    if not relax or result.status not in ("infeasible", "over_budget"):
        return result
    floors = latency_floors(request, snapshot)

    def replan(changed: PlanRequest) -> Plan:
        return plan(changed, snapshot, executor=executor, relax=False)

    return replace(
        result,
        rejected=with_floors(result.rejected, floors),
        relaxations=relaxations(request, snapshot, result, floors, binding, replan),
    )


def _solve(
    request: PlanRequest, snapshot: CatalogSnapshot, executor: Executor | None
) -> tuple[Plan, frozenset[str]]:
    """The plan, and the latency limits (``ttft_ms``, ``tpot_ms``, ``e2e_ms``) that bind the
    capacity of its fleet's options."""
    candidates = build_candidates(request, snapshot)
    buckets = tuple(
        BucketSummary(b.key, b.share, b.prompt_tokens, b.output_tokens, request.demand_qps(b))
        for b in request.buckets
    )
    prices_as_of = request.as_of or _newest_observation(snapshot)
    if not candidates.items:
        unpriced = bool(candidates.rejected) and all(
            r.code == "no_price" for r in candidates.rejected.values()
        )
        return Plan(
            status="no_price" if unpriced else "infeasible",
            fleet=None,
            usd_per_million_output_tokens=None,
            alternatives=(),
            savings_vs_best_single_type=None,
            rejected=_sorted_rejections(candidates.rejected),
            max_qps_within_budget=0.0 if request.budget_usd_per_hour is not None else None,
            explanation=(no_candidates_sentence(request, candidates),),
            assumptions=assumptions(request, candidates, None),
            buckets=buckets,
            prices_as_of=prices_as_of,
        ), frozenset()

    problem = fleet_problem(request, candidates)
    vendors = scope_vendors(candidates, request)
    labels = priced_constraints(request)
    # The replica floors' what-if comes with the policy's solve (mostly from the same solve:
    # ``one_vendor_solve``); the helper re-solves the other constraints.
    floors = "min_replicas" in labels
    aside_labels = tuple(label for label in labels if label != "min_replicas")
    if executor is not None:
        # The helper runs the single-type solves and then the what-if re-solves (bounded by
        # the single types' costs) while this thread solves and assembles the policy's fleet.
        # Plain values go to the helper and come back, so on a process pool the two share
        # nothing (no GIL); on threads HiGHS still releases it.
        try:
            aside: Future[Aside] | None = executor.submit(
                solve_aside, problem, vendors, aside_labels
            )
        except BrokenExecutor:  # no helper would start: this thread does the helper's share
            aside = None
        solution, budget_qps, own = one_vendor_solve(
            problem, candidates, request, price_min_replicas=floors
        )
        fleet = assemble_fleet(request, candidates, solution) if solution.has_fleet else None
        try:
            if aside is None:
                raise BrokenExecutor("no helper")
            singles, relaxed = aside.result()
        except BrokenExecutor:
            # The helper died (a process pool lost a worker): this thread does its share.
            singles, relaxed = solve_aside(problem, vendors, aside_labels)
    else:
        solution, budget_qps, own = one_vendor_solve(
            problem, candidates, request, price_min_replicas=floors
        )
        fleet = assemble_fleet(request, candidates, solution) if solution.has_fleet else None
        singles, relaxed = solve_aside(problem, vendors, aside_labels)
    if labels:
        relaxed = {**(relaxed or {}), **own}
    alternatives = single_type_alternatives(request, candidates, singles)
    if not solution.has_fleet:
        relaxed = None
    if not solution.has_fleet and alternatives:
        # The policy's solves found nothing in their time limit (a single-type fleet exists,
        # so the request is feasible): the cheapest single type is within every rule.
        timed_out = any(r.code is ReasonCode.TIME_LIMIT for r in solution.reasons)
        solution = singles[alternatives[0].gpu]
        if timed_out:
            solution = replace(solution, status=SolveStatus.TIME_LIMIT)
        fleet = _single_type_fleet(request, candidates, alternatives[0], solution)
    decision = decide(request, fleet, alternatives)
    if decision.rule == "mix_saving_below_threshold" and decision.single_type_gpu is not None:
        gpu = decision.single_type_gpu
        solution = singles[gpu]
        fleet = _single_type_fleet(
            request, candidates, next(a for a in alternatives if a.gpu == gpu), solution
        )
        if request.budget_usd_per_hour is not None:
            # the most load the budget buys of this GPU alone, within the budget or over it
            budget_qps = max_qps_within_budget(problem, gpu)
    rejected = dict(candidates.rejected)
    in_fleet = {line.gpu for line in fleet.lines} if fleet else set()
    for gpu, sol in singles.items():
        if not sol.has_fleet and gpu not in in_fleet:
            rejected[gpu] = single_type_rejection(gpu, sol, request, candidates)
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
    spares = redundancy(request, candidates, solution) if fleet is not None else None
    routes = routing(request, fleet) if fleet is not None else None
    status = plan_status(solution.status.value)
    binding = frozenset(
        f"{cap.limited_by}_ms"
        for key, _ in solution.units
        for cap in candidates.items[key].replica_capacity
        if cap.limited_by in ("ttft", "tpot", "e2e")
    )
    return Plan(
        status=status,
        fleet=fleet,
        usd_per_million_output_tokens=usd_per_million_tokens(request, fleet),
        alternatives=alternatives,
        savings_vs_best_single_type=savings,
        rejected=_sorted_rejections(rejected),
        max_qps_within_budget=budget_qps,
        explanation=explain(
            request,
            candidates,
            solution,
            fleet,
            alternatives,
            savings,
            budget_qps,
            problem,
            relaxed,
        )
        + ((decision_sentence(decision),) if fleet is not None else ())
        + ((redundancy_sentence(spares),) if spares is not None else ())
        + (
            (routing_sentence(routes, fleet, request.routing),)
            if routes is not None and fleet
            else ()
        )
        + host_not_priced_sentences(fleet)
        + stale_price_sentences(fleet, prices_as_of, request.policy.price_max_age_days),
        assumptions=assumptions(request, candidates, solution if solution.has_fleet else None),
        buckets=buckets,
        prices_as_of=prices_as_of,
        mixing=decision,
        redundancy=spares,
        routing=routes,
    ), binding


# ---- assembly -----------------------------------------------------------------------------


def _single_type_fleet(
    request: PlanRequest, candidates: Candidates, alternative: Alternative, solution: FleetSolution
) -> Fleet:
    """The plan's fleet when it is a single-type alternative: its lines as already assembled,
    with the fleet's capacity (what :func:`assemble_fleet` adds to them)."""
    return replace(alternative.fleet, qps_capacity=fleet_capacity(request, candidates, solution))


def _newest_observation(snapshot: CatalogSnapshot) -> datetime | None:
    return max((p.observed_at for p in snapshot.prices), default=None)


def _sorted_rejections(rejected: dict[str, Rejection]) -> tuple[Rejection, ...]:
    return tuple(rejected[k] for k in sorted(rejected))
