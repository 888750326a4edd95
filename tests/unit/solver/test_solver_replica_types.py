"""One GPU sold as one or two replica types in several instance sizes: solved without HiGHS
(``replica_types``), with the MILP's cheapest cost and fewest cards, checked against the MILP
itself and against brute force."""

from __future__ import annotations

import random
from dataclasses import replace

import numpy as np
import pytest
from scipy.optimize import linprog

from service.domain.solver import Bucket, FleetOption, FleetProblem, SolveStatus, solve_fleet
from service.domain.solver import min_cost as min_cost_module
from service.domain.solver.many_types import carrying_inequalities
from service.domain.solver.prune import Fleet, Mode, canonicalize, select
from service.domain.solver.replica_types import MAX_TYPES, replica_type_fleet
from tests.unit.solver.solver_bruteforce import reference
from tests.unit.solver.test_solver_oracle import check_fleet


def packed_problem(
    seed: int, *, types: int, sizes: int = 3, line_min_replicas: int = 0
) -> FleetProblem:
    """One GPU; ``types`` replica types (tensor-parallel degrees), each sold in ``sizes``
    instance sizes hosting 1, 2, 4 or 8 replicas, priced per instance with a random bulk
    discount or premium; random shapes, some a type cannot serve; min_replicas; headroom;
    an optional line minimum (replicas every used option must host)."""
    rng = random.Random(seed)
    n_buckets = rng.randint(1, 3)
    buckets = tuple(Bucket(f"b{s}", round(rng.uniform(0.5, 30.0), 1)) for s in range(n_buckets))
    options = []
    degrees = [1, 2, 4] if types <= 3 else [1, 2, 4, 8, 16]
    for t, tp in enumerate(rng.sample(degrees, types)):
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
        line_min_replicas=line_min_replicas,
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
@pytest.mark.parametrize("types", [1, 2, 3, 4])
@pytest.mark.parametrize("line_min", [0, 2, 3])
def test_replica_types_match_the_milp(
    seed: int, types: int, line_min: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    problem = packed_problem(seed, types=types, line_min_replicas=line_min)
    assert handled(problem)[0]
    got = solve_fleet(problem)
    cost, cards, feasible = milp_only(problem, monkeypatch)
    assert got.has_fleet == feasible
    if not feasible:
        return
    assert got.status is SolveStatus.OPTIMAL
    assert (round(got.usd_per_hour, 6), got.total_cards) == (cost, cards)
    check_fleet(problem, got)


@pytest.mark.parametrize("seed", range(100, 140))
@pytest.mark.parametrize(("types", "sizes"), [(2, 2), (3, 1), (4, 1)])
@pytest.mark.parametrize("line_min", [0, 3])
def test_replica_types_match_brute_force(seed: int, types: int, sizes: int, line_min: int) -> None:
    problem = packed_problem(seed, types=types, sizes=sizes, line_min_replicas=line_min)
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
    left = {3: 0, 4: 0, 5: 0}
    for seed in range(60):  # five replica types left after pruning: the MILP
        for types in left:
            problem = packed_problem(seed, types=types)
            canon = canonicalize(problem)
            sel = select(canon, Mode.COST, "g")
            if len(set((canon.tp[sel.cols] // canon.rpu[sel.cols]).tolist())) == types:
                left[types] += 1
                assert replica_type_fleet(canon, sel)[0] == (types <= MAX_TYPES)
    assert all(left.values())
    capped = replace(two, options=(replace(two.options[0], max_units=3), *two.options[1:]))
    assert not handled(capped)[0]  # an availability cap: the MILP
    carded = replace(two, max_cards=(("g", 10_000),))
    assert not handled(carded)[0]  # a card cap: the MILP
    assert handled(replace(two, line_min_replicas=2))[0]  # a line minimum: inside F_t
    assert not handled(replace(two, shared=True))[0] or len(two.buckets) == 1
    placed = tuple(
        replace(o, provider=f"p{i % 2}", region=f"r{i % 2}") for i, o in enumerate(two.options)
    )
    spread = replace(two, options=placed, min_providers=2)
    assert not handled(spread)[0]  # spread over providers: the MILP


@pytest.mark.parametrize("seed", range(200, 220))
def test_under_spread_the_milp_answers(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    base = packed_problem(seed, types=2)
    placed = tuple(
        replace(o, provider=f"p{i % 2}", region=f"r{i % 2}") for i, o in enumerate(base.options)
    )
    problem = replace(base, options=placed, min_providers=2)
    got = solve_fleet(problem)
    cost, cards, feasible = milp_only(problem, monkeypatch)
    assert got.has_fleet == feasible
    if feasible:
        assert (round(got.usd_per_hour, 6), got.total_cards) == (cost, cards)


def test_a_line_minimum_is_met_by_every_option_used() -> None:
    """Five replicas of one type, sold as 1-replica units ($1.00) and 2-replica units ($1.90).
    Free, the cheapest fleet mixes sizes (2 x r2 + 1 x r1 = $4.80); with every used option
    hosting at least 3 replicas, mixing costs 2 x r2 + 3 x r1 = $6.80 and three r2 $5.70, so
    five r1 ($5.00) wins; without HiGHS, as the MILP finds it."""
    one = FleetOption("g|r1", "g", 1, 1.0, (1.0,), replicas_per_unit=1)
    two = FleetOption("g|r2", "g", 2, 1.9, (2.0,), replicas_per_unit=2)
    free = FleetProblem(buckets=(Bucket("b", 5.0),), options=(one, two))
    assert handled(free)[0]
    assert dict(solve_fleet(free).units) == {"g|r1": 1, "g|r2": 2}
    lined = replace(free, line_min_replicas=3)
    assert handled(lined)[0]
    solved = solve_fleet(lined)
    assert dict(solved.units) == {"g|r1": 5}
    assert solved.usd_per_hour == pytest.approx(5.0)


@pytest.mark.parametrize("seed", range(40))
def test_the_carrying_inequalities_agree_with_the_split_lp(seed: int) -> None:
    """``Q @ R >= phi`` holds exactly when some split of the load over the replicas exists
    (an LP, solved here directly): on random capacities, some shapes a type cannot serve,
    and replica counts on both sides of the boundary."""
    rng = np.random.default_rng(seed)
    shapes, types = int(rng.integers(1, 6)), int(rng.integers(3, 5))
    kappa = rng.uniform(0.2, 5.0, (shapes, types)) * (rng.random((shapes, types)) > 0.25)
    kappa[:, int(rng.integers(types))] = rng.uniform(0.2, 5.0, shapes)  # every shape served
    demand = rng.uniform(0.5, 20.0, shapes)
    q, phi = carrying_inequalities(kappa, demand)
    assert q.shape[0] > 0
    cells = np.argwhere(kappa > 0)
    for _ in range(25):
        replicas = rng.uniform(0.0, 12.0, types)
        a_eq = np.zeros((shapes, len(cells)))
        a_eq[cells[:, 0], np.arange(len(cells))] = 1.0
        a_ub = np.zeros((types, len(cells)))
        a_ub[cells[:, 1], np.arange(len(cells))] = 1.0 / kappa[cells[:, 0], cells[:, 1]]
        lp = linprog(np.zeros(len(cells)), A_ub=a_ub, b_ub=replicas, A_eq=a_eq, b_eq=demand)
        margin = float(np.min(q @ replicas - phi))
        if abs(margin) > 1e-6:
            assert (margin >= 0) == (lp.status == 0)
