"""A replica floor on every fleet line (``line_min_replicas``) and spread over providers and
regions (``min_providers``, ``min_regions``: that many places, and from 2 up the fleet survives
losing any one), inside the MILP. Against brute force on tiny seeded instances with places
(same status, optimal cost and fewest cards, the most load a budget buys); the returned fleets
meet every condition; infeasible requests name the setting."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
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
    relaxation_savings,
    solve_fleet,
)
from service.domain.solver import min_cost as min_cost_module
from service.domain.solver.formulation import spread_first_fleet
from service.domain.solver.prune import Mode, canonicalize, places_of, select
from tests.unit.solver.solver_bruteforce import (
    assignment_fits,
    reference_max_scale,
    spread_problem,
)
from tests.unit.solver.test_solver_oracle import agree


def check_places(problem: FleetProblem, solution: FleetSolution) -> None:
    """Every used line hosts ``line_min_replicas``; the fleet uses enough providers and
    regions and, from 2 up, carries the whole demand without any one of them."""
    options = {o.key: o for o in problem.options}
    units = dict(solution.units)
    for key, n in units.items():
        assert n * options[key].replicas_per_unit >= problem.line_min_replicas
    demand = np.array([b.demand_qps for b in problem.buckets]) * (1 + problem.headroom)
    cap = np.array([o.capacity_qps for o in problem.options], dtype=float)
    x = np.array([units.get(o.key, 0) for o in problem.options], dtype=np.int64)
    for least, place in (
        (problem.min_providers, lambda o: o.provider),
        (problem.min_regions, lambda o: (o.provider, o.region)),
    ):
        used = {place(options[k]) for k in units}
        assert len(used) >= least or not units
        if least < 2:
            continue
        for lost in used:
            rest = np.array(
                [0 if place(o) == lost else n for o, n in zip(problem.options, x, strict=True)]
            )
            assert assignment_fits(demand, cap, rest, shared=problem.shared), lost


def agree_spread(problem: FleetProblem) -> None:
    agree(problem, check_places)


@pytest.mark.parametrize("seed", range(8000, 8160))
def test_line_minimum_and_spread_match_brute_force(seed: int) -> None:
    agree_spread(spread_problem(seed, max_options=4))


@pytest.mark.parametrize("seed", range(8200, 8260))
def test_many_options_match_brute_force(seed: int) -> None:
    """Five or six options, several per place: the MILP with C7-C9 and pruning within a place."""
    agree_spread(spread_problem(seed, max_options=6))


@pytest.mark.parametrize("seed", range(8300, 8340))
def test_multi_replica_units_match_brute_force(seed: int) -> None:
    agree_spread(spread_problem(seed, max_options=4, multi_replica=True))


@pytest.mark.parametrize("seed", range(8400, 8420))
def test_two_stage_tiebreak_matches_brute_force(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(min_cost_module, "ONE_STAGE_MAX_OBJECTIVE", 0.0)
    agree_spread(spread_problem(seed, max_options=5))


@pytest.mark.parametrize("seed", range(8500, 8560))
def test_max_qps_within_budget_matches_brute_force(seed: int) -> None:
    problem = replace(
        spread_problem(seed, max_options=3), budget_usd_per_hour=round(6 + (seed % 7) * 4.5, 2)
    )
    want = reference_max_scale(problem) * problem.total_demand_qps
    got = max_qps_within_budget(problem)
    assert got <= want * (1 + 1e-9) + 1e-9
    assert got >= want * (1 - 1e-5) - 1e-9


def test_the_generator_exercises_every_condition() -> None:
    """Spread and line minimums decide the answer on many instances: dearer than without
    them, and infeasible for want of places on others."""
    dearer = no_places = 0
    for seed in range(8000, 8160):
        problem = spread_problem(seed, max_options=4)
        free = solve_fleet(replace(problem, line_min_replicas=0, min_providers=0, min_regions=0))
        got = solve_fleet(problem)
        if got.has_fleet and free.has_fleet:
            assert got.usd_per_hour >= free.usd_per_hour - 1e-9
            dearer += got.usd_per_hour > free.usd_per_hour + 1e-9
        no_places += any(r.code is ReasonCode.SPREAD for r in got.reasons)
    assert dearer >= 15 and no_places >= 10


SHORT_LONG = (Bucket("short", 30.0), Bucket("long", 2.0))  # 1.5 + 0.5 H100s


def offer(
    key: str, provider: str, region: str, usd: float, caps: tuple[float, float]
) -> FleetOption:
    return FleetOption(key, key.split("|")[0], 1, usd, caps, provider=provider, region=region)


AWS_H100 = offer("h100|aws", "aws", "us-east-1", 4.0, (20.0, 4.0))
AWS_H100_WEST = offer("h100|aws-west", "aws", "us-west-2", 4.2, (20.0, 4.0))
GCP_H100 = offer("h100|gcp", "gcp", "us-central1", 4.5, (20.0, 4.0))
GCP_L4 = offer("l4|gcp", "gcp", "us-central1", 0.8, (5.0, 0.0))


def test_surviving_a_provider_doubles_up_what_one_provider_needs() -> None:
    """By itself aws carries the load on 2 H100s; to survive losing either provider each of
    aws and gcp must carry it alone: 2 + 2, where 2 providers without survival would need
    only one line on each."""
    options = (AWS_H100, GCP_H100)
    alone = solve_fleet(FleetProblem(buckets=SHORT_LONG, options=options))
    assert alone.units == (("h100|aws", 2),)
    spread = solve_fleet(FleetProblem(buckets=SHORT_LONG, options=options, min_providers=2))
    assert spread.status is SolveStatus.OPTIMAL
    assert dict(spread.units) == {"h100|aws": 2, "h100|gcp": 2}
    saved = dict(
        relaxation_savings(
            FleetProblem(buckets=SHORT_LONG, options=options, min_providers=2), spread
        )
    )
    assert saved["spread"] == pytest.approx(spread.usd_per_hour - alone.usd_per_hour)


def test_regions_of_one_provider_count_as_regions_not_providers() -> None:
    options = (AWS_H100, AWS_H100_WEST)
    by_region = solve_fleet(FleetProblem(buckets=SHORT_LONG, options=options, min_regions=2))
    assert dict(by_region.units) == {"h100|aws": 2, "h100|aws-west": 2}
    by_provider = solve_fleet(FleetProblem(buckets=SHORT_LONG, options=options, min_providers=2))
    assert by_provider.status is SolveStatus.INFEASIBLE
    (reason,) = by_provider.reasons
    assert reason.code is ReasonCode.SPREAD and reason.subject == "min_providers"
    assert reason.shortfall == 1
    assert "spread.min_providers is 2 but only 1 providers" in reason.message


def test_losing_the_only_place_serving_a_shape_is_named() -> None:
    """gcp's L4s serve only short requests: without aws nobody serves the long ones."""
    problem = FleetProblem(buckets=SHORT_LONG, options=(AWS_H100, GCP_L4), min_providers=2)
    got = solve_fleet(problem)
    assert got.status is SolveStatus.INFEASIBLE
    (reason,) = got.reasons
    assert reason.code is ReasonCode.SPREAD and reason.buckets == ("long",)
    assert "losing provider aws" in reason.message
    singles = cheapest_single_type(replace(problem, options=(AWS_H100, GCP_H100, GCP_L4)))
    assert singles["h100"].has_fleet  # one GPU type across two providers survives
    assert not singles["l4"].has_fleet


def test_a_line_minimum_raises_every_used_line() -> None:
    """Without a floor the cheapest fleet is 1 H100 and 2 L4s (short requests on the L4s);
    with 2 replicas per line each line used has at least 2."""
    problem = FleetProblem(
        buckets=(Bucket("short", 12.0), Bucket("long", 3.0)), options=(AWS_H100, GCP_L4)
    )
    free = solve_fleet(problem)
    assert min(n for _, n in free.units) == 1
    floored = solve_fleet(replace(problem, line_min_replicas=2))
    assert floored.status is SolveStatus.OPTIMAL
    assert all(n >= 2 for _, n in floored.units)
    check_places(replace(problem, line_min_replicas=2), floored)


def test_a_line_minimum_the_caps_forbid_is_named() -> None:
    problem = FleetProblem(
        buckets=SHORT_LONG,
        options=(replace(AWS_H100, max_units=2),),
        line_min_replicas=3,
    )
    got = solve_fleet(problem)
    assert got.status is SolveStatus.INFEASIBLE
    assert got.reasons[0].code is ReasonCode.LINE_MIN_REPLICAS
    assert "min_replicas is 3 per line" in got.reasons[0].message


@pytest.mark.parametrize("seed", range(8600, 9000))
def test_the_first_spread_fleet_survives_every_loss_and_bounds_the_optimum(seed: int) -> None:
    """The fleet that bounds a spread MILP from the start (``spread_first_fleet``) is feasible:
    its lines sit in as many different places as the spread asks, each carries the whole
    demand alone within its bound, the card caps hold, and without any one place the rest
    still carries everything. So the optimum costs at most as much."""
    problem = spread_problem(seed, max_options=6)
    canon = canonicalize(problem)
    if not canon.spread:
        return
    sel = select(canon, Mode.COST)
    first = spread_first_fleet(canon, sel)
    if first is None:
        return
    picked, units = first
    k = max(problem.min_providers, problem.min_regions)
    kind = 0 if problem.min_providers >= 2 else 1
    assert np.unique(places_of(canon, kind)[sel.cols[picked]]).size == k == picked.size
    assert np.all(units <= sel.upper[picked])
    fleet = {canon.keys[int(sel.cols[j])]: int(n) for j, n in zip(picked, units, strict=True)}
    check_places(problem, FleetSolution(SolveStatus.OPTIMAL, units=tuple(sorted(fleet.items()))))
    options = {o.key: o for o in problem.options}
    for gpu, limit in problem.max_cards:
        used = [(options[key], n) for key, n in fleet.items() if options[key].gpu_id == gpu]
        assert sum(o.cards_per_unit * n for o, n in used) <= limit
    best = solve_fleet(problem)
    first_usd = sum(options[key].usd_per_hour * n for key, n in fleet.items())
    assert best.status is SolveStatus.OPTIMAL
    assert best.usd_per_hour <= first_usd + 1e-9


def test_the_first_spread_fleet_keeps_to_one_gpu_when_a_type_rule_is_in_force() -> None:
    """With one GPU type required, the bounding fleet takes one GPU's offers in two regions,
    even where another GPU's offer is the cheapest in one of them."""
    problem = FleetProblem(
        buckets=(Bucket("b0", 10.0), Bucket("b1", 10.0)),
        options=(
            offer("g1|a", "p", "r1", 1.0, (20.0, 20.0)),
            offer("g1|b", "p", "r2", 1.5, (20.0, 20.0)),
            offer("g2|c", "p", "r2", 0.5, (20.0, 20.0)),
        ),
        min_regions=2,
        allow_mix=False,
    )
    canon = canonicalize(problem)
    sel = select(canon, Mode.COST)
    first = spread_first_fleet(canon, sel)
    assert first is not None
    picked, units = first
    assert {canon.keys[int(j)] for j in sel.cols[picked]} == {"g1|a", "g1|b"}
    assert units.tolist() == [1.0, 1.0]
    assert solve_fleet(problem).units == (("g1|a", 1), ("g1|b", 1))
