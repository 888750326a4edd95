"""Shared routing (``FleetProblem.shared``): every unit serves the whole request mix. Against
brute force on tiny seeded instances (same status, optimal cost and fewest cards, and the most
load a budget buys), the served rates keep the mix's proportions on every option, it is never
cheaper than routing by shape, and a mix no option serves whole is infeasible with a reason
that names the routing."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from service.domain.solver import (
    Bucket,
    FleetOption,
    FleetProblem,
    FleetSolution,
    ReasonCode,
    SolveStatus,
    cheapest_single_type,
    max_qps_within_budget,
    solve_fleet,
    solve_single_type,
)
from tests.unit.solver.solver_bruteforce import random_problem, reference_max_scale
from tests.unit.solver.test_solver_oracle import agree


def shared(seed: int, **kwargs: int | bool) -> FleetProblem:
    return replace(random_problem(seed, **kwargs), shared=True)  # type: ignore[arg-type]


def assert_shares_follow_the_mix(
    problem: FleetProblem, served: tuple[tuple[str, str, float], ...]
) -> None:
    """Every option carries the same fraction of every demanded bucket."""
    demand = {b.key: b.demand_qps for b in problem.buckets if b.demand_qps > 0}
    per_option: dict[str, dict[str, float]] = {}
    for bucket, option, qps in served:
        per_option.setdefault(option, {})[bucket] = qps
    for rates in per_option.values():
        assert rates.keys() == demand.keys()
        fractions = [rates[b] / demand[b] for b in demand]
        assert max(fractions) == pytest.approx(min(fractions), rel=1e-9)


def agree_shared(problem: FleetProblem) -> None:
    agree(problem, follows_the_mix)


def follows_the_mix(problem: FleetProblem, got: FleetSolution) -> None:
    if sum(b.demand_qps > 0 for b in problem.buckets) > 1:
        assert_shares_follow_the_mix(problem, got.served_qps)


@pytest.mark.parametrize("seed", range(7000, 7120))
def test_shared_matches_brute_force(seed: int) -> None:
    agree_shared(shared(seed))


@pytest.mark.parametrize("seed", range(7200, 7240))
def test_shared_many_options_match_brute_force(seed: int) -> None:
    """Five or six options: the MILP's one shared row (the exact path takes one or two)."""
    agree_shared(shared(seed, max_options=6))


@pytest.mark.parametrize("seed", range(7300, 7340))
def test_shared_multi_replica_units_match_brute_force(seed: int) -> None:
    agree_shared(shared(seed, multi_replica=True))


@pytest.mark.parametrize("seed", range(7400, 7430))
def test_shared_max_qps_within_budget_matches_brute_force(seed: int) -> None:
    problem = replace(shared(seed, max_options=3, max_buckets=2), budget_usd_per_hour=8.5)
    want = reference_max_scale(problem) * problem.total_demand_qps
    got = max_qps_within_budget(problem)
    assert got <= want * (1 + 1e-9) + 1e-9
    assert got >= want * (1 - 1e-5) - 1e-9


def test_shared_is_never_cheaper_and_sometimes_dearer_than_by_shape() -> None:
    dearer = 0
    for seed in range(7000, 7120):
        free = solve_fleet(random_problem(seed))
        tied = solve_fleet(shared(seed))
        if not tied.has_fleet:
            continue
        assert free.has_fleet
        assert tied.usd_per_hour >= free.usd_per_hour - 1e-9
        dearer += tied.usd_per_hour > free.usd_per_hour + 1e-9
    assert dearer >= 10


SHORT_LONG = (Bucket("short", 60.0), Bucket("long", 6.0))
L4 = FleetOption("l4|tp1|gcp", "l4", 1, 0.80, (10.0, 0.0))
H100 = FleetOption("h100|tp1|aws", "h100", 1, 4.00, (40.0, 5.0))


def test_a_card_that_cannot_serve_every_shape_is_left_out() -> None:
    """By shape, L4s take the short requests; shared, only H100s can serve the mix: each H100
    carries 1 / (60/40 + 6/5) of the whole mix, so ceil(2.7) = 3 of them."""
    by_shape = solve_fleet(FleetProblem(buckets=SHORT_LONG, options=(L4, H100)))
    assert dict(by_shape.units).keys() == {L4.key, H100.key}
    got = solve_fleet(FleetProblem(buckets=SHORT_LONG, options=(L4, H100), shared=True))
    assert got.status is SolveStatus.OPTIMAL
    assert got.units == ((H100.key, math.ceil(60 / 40 + 6 / 5)),)
    assert_shares_follow_the_mix(FleetProblem(buckets=SHORT_LONG, options=(H100,)), got.served_qps)


def test_no_option_serving_the_whole_mix_is_infeasible_naming_the_routing() -> None:
    long_only = FleetOption("b200|tp1|aws", "b200", 1, 6.00, (0.0, 9.0))
    problem = FleetProblem(buckets=SHORT_LONG, options=(L4, long_only), shared=True)
    got = solve_fleet(problem)
    assert got.status is SolveStatus.INFEASIBLE
    assert [r.code for r in got.reasons] == [ReasonCode.SHARED_ROUTING]
    assert "routing 'shared'" in got.reasons[0].message
    assert solve_fleet(replace(problem, shared=False)).has_fleet  # by shape it is feasible
    alone = solve_single_type(problem, "l4")
    assert [r.code for r in alone.reasons] == [ReasonCode.GPU_CANNOT_SERVE]
    singles = cheapest_single_type(replace(problem, options=(L4, long_only, H100)))
    assert singles["h100"].has_fleet and not singles["b200"].has_fleet


def test_one_demanded_shape_is_the_same_either_way() -> None:
    one = (Bucket("short", 60.0), Bucket("long", 0.0))
    a = solve_fleet(FleetProblem(buckets=one, options=(L4, H100)))
    b = solve_fleet(FleetProblem(buckets=one, options=(L4, H100), shared=True))
    assert (a.units, a.served_qps) == (b.units, b.served_qps)
