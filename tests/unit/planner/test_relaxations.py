"""Infeasible and over-budget plans say what would work: each rejected GPU's latency floor on
the workload, and the cheapest changes to the request that make it feasible, each re-planned
here to check that the changed request gets a feasible plan at the stated cost."""

from __future__ import annotations

from dataclasses import replace

import pytest

from service.domain.perfmodel import Slo
from service.domain.planner import Plan, PlanRequest, Relaxation, plan
from service.domain.planner.relax import (
    PLANS_MAX,
    RELAXATIONS_MAX,
    latency_floors,
    relaxations,
)
from tests.support.plan_requests import plan_request
from tests.unit.planner.test_planner import snapshot


def changed(request: PlanRequest, r: Relaxation) -> PlanRequest:
    """The request a caller sends for relaxation ``r``: the fields it names, the rest as
    asked."""
    slo = request.slo
    slo = replace(
        slo,
        ttft_ms=r.ttft_ms if r.ttft_ms is not None else slo.ttft_ms,
        tpot_ms=r.tpot_ms if r.tpot_ms is not None else slo.tpot_ms,
        e2e_ms=r.e2e_ms if r.e2e_ms is not None else slo.e2e_ms,
    )
    c = request.constraints
    constraints = replace(
        c,
        tensor_parallel=r.tensor_parallel or c.tensor_parallel,
        allow_pcie_tensor_parallel=(
            c.allow_pcie_tensor_parallel
            if r.allow_pcie_tensor_parallel is None
            else r.allow_pcie_tensor_parallel
        ),
        gpus=r.gpus if r.gpus is not None else c.gpus,
        exclude_gpus=r.exclude_gpus if r.exclude_gpus is not None else c.exclude_gpus,
        providers=r.providers if r.providers is not None else c.providers,
        allow_marketplaces=(
            c.allow_marketplaces if r.allow_marketplaces is None else r.allow_marketplaces
        ),
    )
    return replace(
        request,
        slo=slo,
        precision=r.precision or request.precision,
        budget_usd_per_hour=(
            r.budget_usd_per_hour
            if r.budget_usd_per_hour is not None
            else request.budget_usd_per_hour
        ),
        constraints=constraints,
    )


def assert_each_relaxation_is_feasible_at_its_cost(request: PlanRequest, p: Plan) -> None:
    assert 0 < len(p.relaxations) <= RELAXATIONS_MAX
    costs = [r.usd_per_hour for r in p.relaxations]
    assert costs == sorted(costs)
    for r in p.relaxations:
        again = plan(changed(request, r), snapshot())
        assert again.status == "optimal", (r.sentence, again.explanation)
        assert again.fleet is not None and not again.relaxations
        assert again.fleet.usd_per_hour == pytest.approx(r.usd_per_hour, rel=1e-9), r.sentence
        assert {line.gpu for line in again.fleet.lines} == set(r.fleet_gpus)
        assert f"${r.usd_per_hour:,.2f}/hour" in r.sentence


def test_an_impossible_tpot_gets_the_smallest_loosening_that_works_and_its_cost() -> None:
    """No card reaches a 2 ms TPOT on an 8B model in bf16: the plan names each GPU's best TPOT
    and offers a TPOT limit just above the lowest of them, and lighter weights."""
    request = plan_request(model="llama-3.1-8b", qps=20, slo=Slo(1000, 2, None, 95))
    p = plan(request, snapshot())
    assert p.status == "infeasible" and p.fleet is None
    floors = [r.best_tpot_ms for r in p.rejected if r.best_tpot_ms is not None]
    assert floors and min(floors) > 2.0
    assert all(r.best_ttft_ms is not None for r in p.rejected if r.best_tpot_ms is not None)
    assert all(r.best_tpot_ms is None for r in p.rejected if r.code == "no_price")
    assert_each_relaxation_is_feasible_at_its_cost(request, p)
    (slo,) = [r for r in p.relaxations if r.kind == "slo"]
    assert slo.tpot_ms is not None and slo.ttft_ms is None
    # The smallest loosening: the lowest floor, rounded up to 0.1 ms.
    assert min(floors) <= slo.tpot_ms <= min(floors) + 0.1 + 0.01
    assert {r.precision for r in p.relaxations if r.kind == "precision"} == {"fp8", "int4"}


def test_a_left_out_gpu_is_offered_with_the_fleet_it_would_get() -> None:
    request = plan_request(model="llama-3.1-8b", qps=20, slo=Slo(1000, 30, None, 95), gpus=("l4",))
    p = plan(request, snapshot())
    assert p.status == "infeasible"
    assert_each_relaxation_is_feasible_at_its_cost(request, p)
    gpus = [r for r in p.relaxations if r.kind == "gpu"]
    assert gpus and all(r.gpus is not None and set(r.gpus) > {"l4"} for r in gpus)
    (l4,) = p.rejected
    assert l4.best_tpot_ms is not None and l4.best_tpot_ms > 30.0


def test_lighter_weights_and_larger_groups_are_offered_when_the_model_does_not_fit() -> None:
    """Llama 3.1 70B in bf16 needs more than two 48 GB L40S: fp8 weights fit two, and groups of
    four fit bf16."""
    request = plan_request(
        model="llama-3.1-70b",
        qps=2,
        slo=Slo(3000, 150, None, 95),
        gpus=("l40s",),
        tensor_parallel=(1, 2),
    )
    p = plan(request, snapshot())
    assert p.status == "infeasible"
    assert_each_relaxation_is_feasible_at_its_cost(request, p)
    kinds = {r.kind for r in p.relaxations}
    assert {"precision", "gpu"} <= kinds or {"precision", "tensor_parallel"} <= kinds
    wider = [r for r in p.relaxations if r.kind == "tensor_parallel"]
    assert all(r.tensor_parallel == (1, 2, 4, 8) for r in wider)


def test_pcie_tensor_parallel_is_offered_when_the_request_turned_it_off() -> None:
    request = plan_request(
        model="llama-3.1-70b",
        qps=2,
        slo=Slo(3000, 150, None, 95),
        gpus=("l40s",),
        allow_pcie_tensor_parallel=False,
    )
    p = plan(request, snapshot())
    assert p.status == "infeasible"
    assert_each_relaxation_is_feasible_at_its_cost(request, p)
    assert any(
        r.kind == "pcie_tensor_parallel" and r.allow_pcie_tensor_parallel for r in p.relaxations
    )


def test_an_over_budget_plan_offers_the_budget_it_needs_and_changes_within_the_budget() -> None:
    request = plan_request(model="llama-3.1-8b", qps=20, slo=Slo(1000, 40, None, 95), budget=1.0)
    p = plan(request, snapshot())
    assert p.status == "over_budget" and p.fleet is not None
    assert_each_relaxation_is_feasible_at_its_cost(request, p)
    (budget,) = [r for r in p.relaxations if r.kind == "budget"]
    assert budget.budget_usd_per_hour is not None
    assert p.fleet.usd_per_hour <= budget.budget_usd_per_hour < p.fleet.usd_per_hour + 0.01
    assert budget.usd_per_hour == p.fleet.usd_per_hour
    # Anything else either fits the asked budget or says which budget it needs.
    for r in p.relaxations:
        assert r.usd_per_hour <= 1.0 or r.budget_usd_per_hour is not None


def test_an_over_budget_plan_bound_by_tpot_is_offered_a_looser_tpot_within_budget() -> None:
    """Between the asked TPOT and four times it, the bisection finds a limit whose fleet fits
    the budget (one GPU type: the search prices single-type fleets)."""
    base = plan_request(
        model="llama-3.1-8b", qps=100, slo=Slo(None, 15, None, 95), gpus=("h100-sxm",)
    )
    optimal = plan(base, snapshot())
    loose = plan(replace(base, slo=Slo(None, 45, None, 95)), snapshot())
    assert optimal.fleet is not None and loose.fleet is not None
    assert loose.fleet.usd_per_hour < optimal.fleet.usd_per_hour
    budget = (optimal.fleet.usd_per_hour + loose.fleet.usd_per_hour) / 2
    request = replace(base, budget_usd_per_hour=budget)
    p = plan(request, snapshot())
    assert p.status == "over_budget"
    assert_each_relaxation_is_feasible_at_its_cost(request, p)
    (slo,) = [r for r in p.relaxations if r.kind == "slo"]
    assert slo.tpot_ms is not None and 15 < slo.tpot_ms <= 60
    assert slo.usd_per_hour <= budget and slo.budget_usd_per_hour is None
    # Looser is never dearer: of the limit found and 45 ms, the looser one's plan costs no more
    # (the search prices single-type fleets, an upper bound, so it may stop above 45 ms).
    if slo.tpot_ms <= 45:
        assert loose.fleet.usd_per_hour <= slo.usd_per_hour
    else:
        assert slo.usd_per_hour <= loose.fleet.usd_per_hour


def test_a_feasible_plan_has_no_relaxations_and_no_floors() -> None:
    p = plan(plan_request(model="llama-3.1-8b", qps=20), snapshot())
    assert p.status == "optimal"
    assert p.relaxations == ()
    assert all(r.best_tpot_ms is None and r.best_ttft_ms is None for r in p.rejected)


def test_the_search_plans_a_bounded_number_of_changes_and_stops_at_a_time_limit() -> None:
    request = plan_request(
        model="llama-3.1-70b",
        qps=2,
        slo=Slo(3000, 150, None, 95),
        gpus=("l40s",),
        tensor_parallel=(1, 2),
        allow_pcie_tensor_parallel=False,
        providers=("aws",),
    )
    first = plan(request, snapshot(), relax=False)
    floors = latency_floors(request, snapshot())
    calls: list[PlanRequest] = []

    def counted(changed_request: PlanRequest) -> Plan:
        calls.append(changed_request)
        return plan(changed_request, snapshot(), relax=False)

    found = relaxations(request, snapshot(), first, floors, frozenset(), counted)
    assert found and 0 < len(calls) <= PLANS_MAX

    def timed_out(changed_request: PlanRequest) -> Plan:
        calls.append(changed_request)
        return replace(plan(changed_request, snapshot(), relax=False), status="time_limit")

    calls.clear()
    assert relaxations(request, snapshot(), first, floors, frozenset(), timed_out) == ()
    assert len(calls) == 1
