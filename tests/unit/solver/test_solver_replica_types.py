"""One GPU sold as one or two replica types in several instance sizes: solved without HiGHS
(``replica_types``), with the MILP's cheapest cost and fewest cards, checked against the MILP
itself and against brute force."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from service.domain.solver import Bucket, FleetOption, FleetProblem, SolveStatus, solve_fleet
from service.domain.solver import min_cost as min_cost_module
from service.domain.solver.prune import Fleet, Mode, canonicalize, select
from service.domain.solver.replica_types import replica_type_fleet
from tests.unit.solver.solver_bruteforce import reference
from tests.unit.solver.test_solver_oracle import check_fleet


def packed_problem(seed: int, *, types: int, sizes: int = 3) -> FleetProblem:
    """One GPU; ``types`` replica types (tensor-parallel degrees), each sold in ``sizes``
    instance sizes hosting 1, 2, 4 or 8 replicas, priced per instance with a random bulk
    discount or premium; random shapes, some a type cannot serve; min_replicas; headroom."""
    rng = random.Random(seed)
    n_buckets = rng.randint(1, 3)
    buckets = tuple(Bucket(f"b{s}", round(rng.uniform(0.5, 30.0), 1)) for s in range(n_buckets))
    options = []
    for t, tp in enumerate(rng.sample([1, 2, 4], types)):
        per_replica = [
            0.0 if rng.random() < 0.25 and t else round(rng.uniform(0.5, 6.0), 3)
            for _ in range(n_buckets)
        ]
        base_cents = rng.randint(50, 400) * tp
        for rpu in sorted(rng.sample([1, 2, 4, 8], sizes)):
            options.append(
                FleetOption(
                    key=f"g|tp{tp}|r{rpu}",
                    gpu_id="g",
                    cards_per_unit=tp * rpu,
                    usd_per_hour=round(base_cents * rpu * rng.uniform(0.7, 1.1)) / 100,
                    capacity_qps=tuple(c * rpu for c in per_replica),
                    replicas_per_unit=rpu,
                )
            )
    return FleetProblem(
        buckets=buckets,
        options=tuple(options),
        headroom=rng.choice([0.0, 0.1, 0.25]),
        min_replicas=rng.choice([0, 1, 2, 5, 12]),
    )


def milp_only(problem: FleetProblem, monkeypatch: pytest.MonkeyPatch) -> tuple[float, int, bool]:
    with monkeypatch.context() as m:
        m.setattr(min_cost_module, "replica_type_fleet", lambda canon, sel: (False, None))
        solved = solve_fleet(problem)
    return round(solved.usd_per_hour, 6), solved.total_cards, solved.has_fleet


def handled(problem: FleetProblem) -> tuple[bool, Fleet | None]:
    canon = canonicalize(problem)
    return replica_type_fleet(canon, select(canon, Mode.COST, "g"))


@pytest.mark.parametrize("seed", range(60))
@pytest.mark.parametrize("types", [1, 2])
def test_replica_types_match_the_milp(
    seed: int, types: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    problem = packed_problem(seed, types=types)
    got = solve_fleet(problem)
    cost, cards, feasible = milp_only(problem, monkeypatch)
    assert got.has_fleet == feasible
    if not feasible:
        return
    assert got.status is SolveStatus.OPTIMAL
    assert (round(got.usd_per_hour, 6), got.total_cards) == (cost, cards)
    check_fleet(problem, got)


@pytest.mark.parametrize("seed", range(100, 140))
def test_replica_types_match_brute_force(seed: int) -> None:
    problem = packed_problem(seed, types=2, sizes=2)
    small = replace(
        problem, buckets=tuple(Bucket(b.key, min(b.demand_qps, 6.0)) for b in problem.buckets)
    )
    want = reference(small)
    got = solve_fleet(small)
    if want.cost_cents is None:
        assert got.status is SolveStatus.INFEASIBLE
        return
    assert round(got.usd_per_hour * 100) == want.cost_cents
    assert got.total_cards == want.cards
    check_fleet(small, got)


def test_the_scopes_it_takes_and_those_it_leaves_to_the_milp() -> None:
    two = packed_problem(7, types=2)
    assert len(two.options) > 2
    assert handled(two)[0]
    three_left = 0
    for seed in range(40):  # three replica types left after pruning: the MILP
        problem = packed_problem(seed, types=3)
        canon = canonicalize(problem)
        sel = select(canon, Mode.COST, "g")
        if len(set((canon.tp[sel.cols] // canon.rpu[sel.cols]).tolist())) == 3:
            three_left += 1
            assert not replica_type_fleet(canon, sel)[0]
    assert three_left > 0
    capped = replace(two, options=(replace(two.options[0], max_units=3), *two.options[1:]))
    assert not handled(capped)[0]  # an availability cap: the MILP
    carded = replace(two, max_cards=(("g", 10_000),))
    assert not handled(carded)[0]  # a card cap: the MILP
    assert not handled(replace(two, line_min_replicas=2))[0]  # a line minimum: the MILP
    assert not handled(replace(two, shared=True))[0] or len(two.buckets) == 1
    placed = tuple(
        replace(o, provider=f"p{i % 2}", region=f"r{i % 2}") for i, o in enumerate(two.options)
    )
    spread = replace(two, options=placed, min_providers=2)
    assert not handled(spread)[0]  # spread over providers: the MILP


@pytest.mark.parametrize("seed", range(200, 220))
def test_under_a_line_minimum_or_spread_the_milp_answers(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = packed_problem(seed, types=2)
    placed = tuple(
        replace(o, provider=f"p{i % 2}", region=f"r{i % 2}") for i, o in enumerate(base.options)
    )
    for problem in (
        replace(base, line_min_replicas=3),
        replace(base, options=placed, min_providers=2),
    ):
        got = solve_fleet(problem)
        cost, cards, feasible = milp_only(problem, monkeypatch)
        assert got.has_fleet == feasible
        if feasible:
            assert (round(got.usd_per_hour, 6), got.total_cards) == (cost, cards)
