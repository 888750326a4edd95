"""The MILP against brute force on tiny seeded instances: same status, same optimal cost, same
fewest-cards tie-break, and a fleet that really serves the demand within every cap. The
``multi_replica`` instances buy units hosting 1-8 model replicas, so C4 counts
``replicas_per_unit * units``."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from service.domain.solver import (
    FleetProblem,
    FleetSolution,
    SolveStatus,
    max_qps_within_budget,
    solve_fleet,
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
    if not problem.allow_mix:
        assert len(cards) <= 1  # C5
    for _, share in solution.utilization:
        assert 0.0 <= share <= 1.0


def _agree(problem: FleetProblem) -> None:
    want = reference(problem)
    got = solve_fleet(problem)
    if want.cost_cents is None:
        assert got.status is SolveStatus.INFEASIBLE, (problem, got)
        assert got.reasons
        return
    assert got.status is SolveStatus.OPTIMAL, (problem, got, want)
    assert round(got.usd_per_hour * 100) == want.cost_cents, (problem, got, want)
    assert got.total_cards == want.cards, (problem, got, want)
    check_fleet(problem, got)


@pytest.mark.parametrize("seed", range(N_INSTANCES))
def test_matches_brute_force(seed: int) -> None:
    _agree(random_problem(seed))


@pytest.mark.parametrize("seed", range(1000, 1040))
def test_matches_brute_force_many_options(seed: int) -> None:
    """Five or six options: the MILP path (the exact path takes one or two)."""
    _agree(random_problem(seed, max_options=6, max_buckets=2))


@pytest.mark.parametrize("seed", range(2000, 2030))
def test_two_stage_tiebreak_matches_brute_force(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The two-stage tie-break (used for huge objectives) gives the same answers."""
    monkeypatch.setattr(min_cost_module, "ONE_STAGE_MAX_OBJECTIVE", 0.0)
    _agree(random_problem(seed, max_options=5))


@pytest.mark.parametrize("seed", range(3000, 3030))
def test_public_milp_fallback_matches_brute_force(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without SciPy's private HiGHS wrapper the public ``milp`` path gives the same answers."""
    monkeypatch.setattr(highs_module, "_PRIVATE_WRAPPER", None)
    _agree(random_problem(seed, max_options=5))


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
    _agree(random_problem(seed, multi_replica=True))


@pytest.mark.parametrize("seed", range(5200, 5240))
def test_multi_replica_units_many_options_match_brute_force(seed: int) -> None:
    """Five or six multi-replica options: the MILP path and its C4 row."""
    _agree(random_problem(seed, max_options=6, max_buckets=2, multi_replica=True))


@pytest.mark.parametrize("seed", range(5300, 5320))
def test_multi_replica_two_stage_matches_brute_force(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(min_cost_module, "ONE_STAGE_MAX_OBJECTIVE", 0.0)
    _agree(random_problem(seed, max_options=5, multi_replica=True))


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
