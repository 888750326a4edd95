"""The MILP against brute force on tiny seeded instances: same status, same optimal cost, same
fewest-cards tie-break, and a fleet that really serves the demand within every cap. The
``multi_replica`` instances buy units hosting 1-8 model replicas, so C4 counts
``replicas_per_unit * units``."""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import replace

import pytest

from service.domain.solver import (
    Bucket,
    FleetOption,
    FleetProblem,
    FleetSolution,
    ReasonCode,
    SolveStatus,
    max_qps_within_budget,
    solve_fleet,
    solve_single_type,
)
from service.domain.solver import highs as highs_module
from service.domain.solver import min_cost as min_cost_module
from tests.unit.solver.solver_bruteforce import random_problem, reference, reference_max_scale

N_INSTANCES = 240


def check_fleet(problem: FleetProblem, solution: FleetSolution) -> None:
    """The returned fleet meets C1-C5 and its reported numbers add up (``solution.units``
    counts units; ``model_replicas`` and ``total_replicas`` count model replicas)."""
    options = {o.key: o for o in problem.options}
    buckets = {b.key: b for b in problem.buckets}
    units = dict(solution.units)  # per option
    assert all(n > 0 for n in units.values())
    assert solution.model_replicas == tuple(
        (key, n * options[key].replicas_per_unit) for key, n in solution.units
    )
    assert solution.total_units == sum(units.values())
    assert math.isclose(
        solution.usd_per_hour,
        sum(options[k].usd_per_hour * n for k, n in units.items()),
        rel_tol=1e-12,
        abs_tol=1e-12,
    )
    served: dict[str, float] = {}
    load: dict[str, float] = {}
    bucket_index = {b.key: s for s, b in enumerate(problem.buckets)}
    for bucket, key, qps in solution.served_qps:
        assert qps > 0
        assert key in units
        cap = options[key].capacity_qps[bucket_index[bucket]]
        assert cap > 0
        served[bucket] = served.get(bucket, 0.0) + qps
        load[key] = load.get(key, 0.0) + qps / cap
    for key, demanded in buckets.items():
        want = demanded.demand_qps * (1 + problem.headroom)
        assert math.isclose(served.get(key, 0.0), want, rel_tol=1e-6, abs_tol=1e-9)  # C1
    for key, used in load.items():
        assert used <= units[key] * (1 + 1e-6) + 1e-9  # C2 (capacity is per unit)
    cards: dict[str, int] = {}
    for key, n in units.items():
        o = options[key]
        if o.max_units is not None:
            assert n <= o.max_units  # C3 units
        cards[o.gpu_id] = cards.get(o.gpu_id, 0) + n * o.cards_per_unit
    assert tuple(sorted(cards.items())) == solution.cards
    for gpu, limit in problem.max_cards:
        assert cards.get(gpu, 0) <= limit  # C3 cards
    hosted = sum(n * options[key].replicas_per_unit for key, n in units.items())
    assert solution.total_replicas == hosted
    assert hosted >= problem.min_replicas  # C4, in model replicas
    if problem.type_limit:
        assert len(cards) <= problem.type_limit  # C5
    for _, share in solution.utilization:
        assert 0.0 <= share <= 1.0


def agree(problem: FleetProblem, *checks: Callable[[FleetProblem, FleetSolution], None]) -> None:
    """The MILP and brute force agree on status, cost and cards; the fleet passes
    :func:`check_fleet` and each of ``checks``."""
    want = reference(problem)
    got = solve_fleet(problem)
    if want.cost_cents is None:
        assert got.status is SolveStatus.INFEASIBLE, (problem, got)
        assert got.reasons
        assert all(r.code is not ReasonCode.SOLVER_ERROR for r in got.reasons), got.reasons
        return
    assert got.status is SolveStatus.OPTIMAL, (problem, got, want)
    assert round(got.usd_per_hour * 100) == want.cost_cents, (problem, got, want)
    assert got.total_cards == want.cards, (problem, got, want)
    check_fleet(problem, got)
    for check in checks:
        check(problem, got)


@pytest.mark.parametrize("seed", range(N_INSTANCES))
def test_matches_brute_force(seed: int) -> None:
    agree(random_problem(seed))


@pytest.mark.parametrize("seed", range(1000, 1040))
def test_matches_brute_force_many_options(seed: int) -> None:
    """Five or six options: the MILP path (the exact path takes one or two)."""
    agree(random_problem(seed, max_options=6, max_buckets=2))


@pytest.mark.parametrize("seed", range(2000, 2030))
def test_two_stage_tiebreak_matches_brute_force(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The two-stage tie-break (used for huge objectives) gives the same answers."""
    monkeypatch.setattr(min_cost_module, "ONE_STAGE_MAX_OBJECTIVE", 0.0)
    agree(random_problem(seed, max_options=5))


@pytest.mark.parametrize("seed", range(3000, 3030))
def test_public_milp_fallback_matches_brute_force(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without SciPy's HiGHS binding and private wrapper the public ``milp`` path gives the
    same answers."""
    monkeypatch.setattr(highs_module, "_CORE", None)
    monkeypatch.setattr(highs_module, "_PRIVATE_WRAPPER", None)
    agree(random_problem(seed, max_options=5))


@pytest.mark.parametrize("seed", range(3100, 3130))
def test_private_wrapper_fallback_matches_brute_force(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the names the binding path uses, SciPy's private wrapper gives the same answers."""
    monkeypatch.setattr(highs_module, "_CORE", None)
    agree(random_problem(seed, max_options=5))


@pytest.mark.parametrize("seed", range(4000, 4060))
def test_max_qps_within_budget_matches_brute_force(seed: int) -> None:
    base = random_problem(seed, max_options=3, max_buckets=2)
    problem = replace(base, budget_usd_per_hour=round(1 + (seed % 7) * 2.5, 2))
    lam = reference_max_scale(problem)
    got = max_qps_within_budget(problem)
    want = lam * problem.total_demand_qps
    assert got <= want * (1 + 1e-9) + 1e-9
    assert got >= want * (1 - 1e-5) - 1e-9


@pytest.mark.parametrize("seed", range(5000, 5160))
def test_multi_replica_units_match_brute_force(seed: int) -> None:
    """Units hosting 1, 2, 4 or 8 replicas; min_replicas up to 12 (C4 in model replicas)."""
    agree(random_problem(seed, multi_replica=True))


@pytest.mark.parametrize("seed", range(5200, 5240))
def test_multi_replica_units_many_options_match_brute_force(seed: int) -> None:
    """Five or six multi-replica options: the MILP path and its C4 row."""
    agree(random_problem(seed, max_options=6, max_buckets=2, multi_replica=True))


@pytest.mark.parametrize("seed", range(5300, 5320))
def test_multi_replica_two_stage_matches_brute_force(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(min_cost_module, "ONE_STAGE_MAX_OBJECTIVE", 0.0)
    agree(random_problem(seed, max_options=5, multi_replica=True))


@pytest.mark.parametrize("seed", range(5400, 5440))
def test_multi_replica_max_qps_within_budget_matches_brute_force(seed: int) -> None:
    base = random_problem(seed, max_options=3, max_buckets=2, multi_replica=True)
    problem = replace(base, budget_usd_per_hour=round(4 + (seed % 7) * 6.5, 2))
    lam = reference_max_scale(problem)
    got = max_qps_within_budget(problem)
    want = lam * problem.total_demand_qps
    assert got <= want * (1 + 1e-9) + 1e-9
    assert got >= want * (1 - 1e-5) - 1e-9


def test_multi_replica_instances_exercise_redundancy() -> None:
    """The generator really produces instances where C4 in model replicas decides."""
    binding = 0
    for seed in range(5000, 5160):
        problem = random_problem(seed, multi_replica=True)
        solution = solve_fleet(problem)
        if solution.has_fleet and "min_replicas" in solution.binding:
            binding += 1
            assert solution.total_replicas == problem.min_replicas
    assert binding >= 10


def type_limited_problem(seed: int, *, limit: int = 2) -> FleetProblem:
    """Three request shapes, a cheap specialist GPU type per shape (it serves only that shape)
    and a dearer generalist type (serves all): the cheapest fleet uses all three specialists,
    which a limit of two forbids, so the limit decides which shapes go to the generalist.
    Random caps, card counts and min_replicas; mixing allowed, at most ``limit`` types."""
    rng = random.Random(seed)
    buckets = tuple(Bucket(f"b{s}", round(rng.uniform(0.5, 10.0), 1)) for s in range(3))
    options = [
        FleetOption(
            key=f"{gpu}|o{s}",
            gpu_id=gpu,
            cards_per_unit=rng.choice([1, 2]),
            usd_per_hour=rng.randint(50, 300) / 100,
            capacity_qps=tuple(
                round(rng.uniform(2.0, 8.0), 2) if t == s else 0.0 for t in range(3)
            ),
        )
        for s, gpu in enumerate(("a", "b", "c"))
    ]
    options += [
        FleetOption(
            key=f"d|o{3 + k}",
            gpu_id="d",
            cards_per_unit=rng.choice([1, 2, 4]),
            usd_per_hour=rng.randint(200, 900) / 100,
            capacity_qps=tuple(round(rng.uniform(1.0, 8.0), 2) for _ in range(3)),
            max_units=rng.randint(1, 6) if rng.random() < 0.3 else None,
        )
        for k in range(rng.randint(1, 2))
    ]
    return FleetProblem(
        buckets=buckets,
        options=tuple(options),
        min_replicas=rng.randint(0, 3),
        headroom=rng.choice([0.0, 0.0, 0.2]),
        max_gpu_types=limit,
    )


@pytest.mark.parametrize("seed", range(6000, 6080))
def test_a_gpu_type_limit_matches_brute_force(seed: int) -> None:
    """max_gpu_types=2 over four GPU types: same optimum as enumerating every fleet of at
    most two types, and the fleet uses at most two."""
    agree(type_limited_problem(seed))


@pytest.mark.parametrize("seed", range(6100, 6130))
def test_a_gpu_type_limit_of_three_matches_brute_force(seed: int) -> None:
    agree(type_limited_problem(seed, limit=3))


def test_the_type_limit_binds_on_some_instances() -> None:
    """The generator produces instances where the unlimited optimum uses more types than the
    limit (so the limit is exercised, and costs money there)."""
    binding = 0
    for seed in range(6000, 6080):
        limited = type_limited_problem(seed)
        free = solve_fleet(replace(limited, max_gpu_types=0))
        if free.has_fleet and len(free.cards) > 2:
            binding += 1
            got = solve_fleet(limited)
            assert not got.has_fleet or got.usd_per_hour >= free.usd_per_hour - 1e-9
    assert binding >= 40


@pytest.mark.parametrize("seed", range(6200, 6230))
def test_max_qps_within_budget_under_a_type_limit_matches_brute_force(seed: int) -> None:
    problem = replace(
        type_limited_problem(seed), budget_usd_per_hour=round(2 + (seed % 5) * 3.0, 2)
    )
    want = reference_max_scale(problem) * problem.total_demand_qps
    got = max_qps_within_budget(problem)
    assert got <= want * (1 + 1e-9) + 1e-9
    assert got >= want * (1 - 1e-5) - 1e-9


@pytest.mark.parametrize("seed", range(5500, 5540))
def test_cost_only_solves_find_the_brute_force_cost(seed: int) -> None:
    """``cost_only`` (curve points): the same cheapest cost and a fleet that meets every
    constraint (the fewest-cards stage is skipped, so the card count may differ among
    equal-cost fleets); the same for each GPU alone."""
    problem = random_problem(seed, max_options=6, max_buckets=2, multi_replica=seed % 2 == 0)
    want = reference(problem)
    got = solve_fleet(problem, cost_only=True)
    if want.cost_cents is None:
        assert got.status is SolveStatus.INFEASIBLE
        return
    assert got.status is SolveStatus.OPTIMAL
    assert round(got.usd_per_hour * 100) == want.cost_cents, (problem, got, want)
    check_fleet(problem, got)
    for gpu in sorted({o.gpu_id for o in problem.options}):
        full = solve_single_type(problem, gpu)
        cheap = solve_single_type(problem, gpu, cost_only=True)
        assert cheap.has_fleet == full.has_fleet
        if full.has_fleet:
            assert cheap.usd_per_hour == pytest.approx(full.usd_per_hour, rel=1e-12)
