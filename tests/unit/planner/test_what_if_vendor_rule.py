"""What a constraint costs is priced within the vendor rule: the what-if re-solve without
``min_replicas`` is the cheapest one-vendor fleet without it, not a fleet mixing vendors that
the plan could never return (which would charge the vendor rule's cost to ``min_replicas``)."""

from __future__ import annotations

import random
from dataclasses import replace

from service.domain.llm import resolve_model
from service.domain.perfmodel import Slo
from service.domain.planner import PlanConstraints, PlanRequest, WorkloadBucket
from service.domain.planner.candidates import build_candidates, fleet_problem
from service.domain.planner.mixing import (
    gpu_vendors,
    one_vendor_solve,
    relaxed_costs_within_rule,
    scope_vendors,
    vendor_scopes,
)
from service.domain.solver import (
    FleetProblem,
    SolveStatus,
    cheapest_single_type,
    relaxed_costs,
    solve_fleet,
    solve_fleet_pricing_min_replicas,
)
from service.usecases.seed_catalog import seed_snapshot


def two_replicas(qps: float, buckets: tuple[WorkloadBucket, ...], slo: Slo) -> PlanRequest:
    """Llama-3.1-70B in FP8 on vLLM, two replicas asked (the default policy: one vendor per
    fleet)."""
    return PlanRequest(
        model=resolve_model("llama-3.1-70b"),
        precision="fp8",
        kv_precision="fp8",
        engine="vllm",
        qps=qps,
        buckets=buckets,
        slo=slo,
        constraints=PlanConstraints(headroom=0.2, min_replicas=2),
    )


def requests() -> list[PlanRequest]:
    """Requests on the bundled catalog that ask for two replicas, one long-prompt shape each."""
    rng = random.Random(7)
    return [
        two_replicas(
            rng.uniform(15, 80),
            (WorkloadBucket("b0", 1.0, rng.randint(1000, 5000), rng.randint(100, 800)),),
            Slo(rng.uniform(1000, 4000), rng.uniform(50, 110), None, 95),
        )
        for _ in range(12)
    ]


def without_replica_floor(problem: FleetProblem) -> FleetProblem:
    return replace(problem, min_replicas=0, line_min_replicas=0, budget_usd_per_hour=None)


def test_the_min_replicas_what_if_is_the_cheapest_one_vendor_fleet_without_it() -> None:
    differs = 0
    for request in requests():
        candidates = build_candidates(request, seed_snapshot())
        problem = fleet_problem(request, candidates)
        solution, _, _ = one_vendor_solve(problem, candidates, request)
        assert solution.has_fleet
        singles = cheapest_single_type(problem)
        vendors = scope_vendors(candidates, request)
        got = relaxed_costs_within_rule(problem, vendors, ("min_replicas",), singles)
        vendor = gpu_vendors(candidates)
        per_vendor = []
        for v in sorted(set(vendor.values())):
            scope = replace(
                problem, options=tuple(o for o in problem.options if vendor[o.gpu_id] == v)
            )
            alone = solve_fleet(without_replica_floor(scope), cost_only=True)
            if alone.status is SolveStatus.OPTIMAL:
                per_vendor.append(alone.usd_per_hour)
        assert got["min_replicas"] == min(per_vendor)
        # the policy's own solve prices the floors the same way, and finds the same fleet
        priced = one_vendor_solve(problem, candidates, request, price_min_replicas=True)
        assert priced.relaxed == {"min_replicas": got["min_replicas"]}
        assert priced.solution.usd_per_hour == solution.usd_per_hour
        assert priced.solution.cards == solution.cards
        assert priced.solution.binding == solution.binding
        assert got["min_replicas"] <= solution.usd_per_hour + 1e-9
        mixed = relaxed_costs(problem, ("min_replicas",), solution.usd_per_hour)["min_replicas"]
        assert mixed <= got["min_replicas"] + 1e-9
        differs += mixed < got["min_replicas"] - 1e-9
    assert differs >= 1  # somewhere a mix of vendors would have been cheaper


def four_shape_requests() -> list[PlanRequest]:
    """Cold 4-shape requests on the bundled catalog (as ``bench/plan_latency.py`` draws them):
    both vendors in scope, the smaller scope often the cheaper."""
    rng = random.Random(11)
    out = []
    for _ in range(10):
        shapes = [(rng.randint(200, 8000), rng.randint(50, 900)) for _ in range(4)]
        buckets = tuple(WorkloadBucket(f"b{i}", 0.25, p, o) for i, (p, o) in enumerate(shapes))
        qps = rng.uniform(5, 80)
        out.append(
            two_replicas(qps, buckets, Slo(rng.uniform(1500, 6000), rng.uniform(60, 150), None, 95))
        )
    return out


def test_scopes_bounded_by_the_best_before_them_give_the_cheapest_scopes_fleet() -> None:
    """Each vendor scope searches only fleets ranking before the best of the scopes solved
    before it; the plan's fleet and the floors' what-if are those of solving every scope in
    full and taking the cheapest (the first of equals)."""
    bounded = 0
    for request in requests() + four_shape_requests():
        candidates = build_candidates(request, seed_snapshot())
        problem = fleet_problem(request, candidates)
        scopes = vendor_scopes(problem, candidates, request)
        full = [solve_fleet_pricing_min_replicas(scope) for scope in scopes]
        fleets = [s for s, _ in full if s.has_fleet]
        best = min(fleets, key=lambda s: (round(s.usd_per_hour, 9), s.total_cards))
        least = min(r for _, r in full if r is not None)
        got = one_vendor_solve(problem, candidates, request, price_min_replicas=True)
        assert (got.solution.usd_per_hour, got.solution.units) == (best.usd_per_hour, best.units)
        assert got.solution.total_cards == best.total_cards
        assert got.relaxed == {"min_replicas": least}
        plain = one_vendor_solve(problem, candidates, request)
        assert (plain.solution.usd_per_hour, plain.solution.units) == (
            best.usd_per_hour,
            best.units,
        )
        bounded += len(scopes) > 1
    assert bounded >= 10  # most requests have both vendors in scope


def test_what_ifs_bounded_by_the_scopes_before_them_are_the_least_over_the_scopes() -> None:
    """Each scope's what-if re-solves search only below the least proven before it; every
    label's answer is still the least over the scopes of each solved in full."""
    checked = 0
    for request in four_shape_requests()[:6]:
        capped = replace(
            request,
            constraints=replace(request.constraints, max_cards=(("h100-sxm", 16), ("mi300x", 8))),
        )
        candidates = build_candidates(capped, seed_snapshot())
        problem = fleet_problem(capped, candidates)
        labels = ("max_cards:h100-sxm", "max_cards:mi300x", "min_replicas")
        singles = cheapest_single_type(problem)
        vendors = scope_vendors(candidates, capped)
        got = relaxed_costs_within_rule(problem, vendors, labels, singles)
        full = [
            relaxed_costs(scope, labels, infeasible_as_inf=True)
            for scope in vendor_scopes(problem, candidates, capped)
        ]
        want = {
            label: min(values)
            for label in labels
            if len(values := [costs[label] for costs in full if label in costs]) == len(full)
            and min(values) < float("inf")
        }
        assert got == want
        checked += len(full) > 1
    assert checked >= 5
