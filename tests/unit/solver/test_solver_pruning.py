"""Dominance pruning and the exact small-scope path never change the answer: checked against
the plain MILP on catalog-shaped instances too big for brute force, and on multi-replica units
where pruning must also keep ``min_replicas`` (model replicas) satisfiable."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from service.domain.solver import (
    Bucket,
    FleetOption,
    FleetProblem,
    FleetSolution,
    SolveStatus,
    cheapest_single_type,
    max_qps_within_budget,
    solve_fleet,
)
from service.domain.solver import exact as exact_module
from service.domain.solver import prune as prune_module
from service.domain.solver.prune import (
    Mode,
    canonicalize,
    dominated,
    need_units,
    same_group_dominated,
    select,
)
from tests.unit.solver.solver_bruteforce import catalog_problem, reference
from tests.unit.solver.test_solver_oracle import check_fleet


def _no_pruning(monkeypatch: pytest.MonkeyPatch) -> None:
    def keep_all(canon: object, cols: np.ndarray, *args: object, **kwargs: object) -> np.ndarray:
        return np.zeros(cols.size, dtype=np.bool_)

    monkeypatch.setattr(prune_module, "dominated", keep_all)
    monkeypatch.setattr(prune_module, "same_group_dominated", keep_all)


def _summary(solution: FleetSolution) -> tuple[SolveStatus, int, int]:
    return solution.status, round(solution.usd_per_hour * 100), solution.total_cards


@pytest.mark.parametrize(
    ("seed", "packed"), [(seed, False) for seed in range(25)] + [(s, True) for s in range(40)]
)
def test_pruning_keeps_cost_and_cards(
    seed: int, packed: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    problem = catalog_problem(seed, packed=packed)
    canon = canonicalize(problem)
    assert select(canon, Mode.COST).size <= len(problem.options)
    pruned = solve_fleet(problem)
    if pruned.has_fleet:
        check_fleet(problem, pruned)
    _no_pruning(monkeypatch)
    assert _summary(solve_fleet(problem)) == _summary(pruned)


@pytest.mark.parametrize(
    ("seed", "packed"), [(seed, False) for seed in range(12)] + [(s, True) for s in range(12)]
)
def test_pruning_keeps_max_qps_within_budget(
    seed: int, packed: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    problem = replace(
        catalog_problem(seed, n_gpus=5, packed=packed), budget_usd_per_hour=25.0 + 10 * seed
    )
    pruned = max_qps_within_budget(problem)
    _no_pruning(monkeypatch)
    assert max_qps_within_budget(problem) == pytest.approx(pruned, rel=1e-6, abs=1e-9)


@pytest.mark.parametrize(
    ("seed", "packed"), [(seed, False) for seed in range(15)] + [(s, True) for s in range(15)]
)
def test_exact_path_equals_milp(seed: int, packed: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    problem = catalog_problem(100 + seed, packed=packed)
    fast = {gpu: _summary(s) for gpu, s in cheapest_single_type(problem).items()}
    single = _summary(solve_fleet(replace(problem, allow_mix=False)))
    monkeypatch.setattr(exact_module, "MAX_EXACT_OPTIONS", 0)
    slow = {gpu: _summary(s) for gpu, s in cheapest_single_type(problem).items()}
    assert fast == slow
    assert _summary(solve_fleet(replace(problem, allow_mix=False))) == single


def test_pruning_is_substantial_on_catalog_shapes() -> None:
    problem = catalog_problem(3, n_gpus=30, n_buckets=4)
    kept = select(canonicalize(problem), Mode.COST).size
    assert kept < len(problem.options) / 3


def test_packed_catalogs_bind_min_replicas_on_multi_replica_units() -> None:
    """Some packed catalog binds min_replicas at a fleet of multi-replica units."""
    hits = 0
    for seed in range(40):
        solution = solve_fleet(catalog_problem(seed, packed=True))
        if "min_replicas" in solution.binding and solution.total_replicas > solution.total_units:
            hits += 1
    assert hits >= 3


# --------------------------------------------------------------------------- multi-replica units

# One 8-card instance hosting 8 replicas (tp1 each), or the same 8 cards as ONE tp8 replica:
# the tp8 replica is faster and cheaper per unit (more capacity per dollar), but hosts 1 replica.
PACKED = FleetOption("h100|x8|r8", "h100", 8, 8.00, (80.0,), replicas_per_unit=8)
FAST = FleetOption("h100|tp8", "h100", 8, 7.00, (100.0,))


def _packed_problem(min_replicas: int, *extra: FleetOption) -> FleetProblem:
    return FleetProblem(
        buckets=(Bucket("b0", 1.0),), options=(PACKED, FAST, *extra), min_replicas=min_replicas
    )


def test_cheaper_per_capacity_option_with_fewer_replicas_is_not_pruned_when_min_binds() -> None:
    redundant = _packed_problem(8)
    canon = canonicalize(redundant)
    cols = np.arange(2, dtype=np.int64)  # canon order: h100|tp8, h100|x8|r8
    assert canon.keys == ("h100|tp8", "h100|x8|r8")
    assert not dominated(canon, cols, need_units(canon, cols), allow_cross_gpu=True).any()
    solution = solve_fleet(redundant)
    assert solution.units == (("h100|x8|r8", 1),)  # 8 replicas for 8.00, not 8 x 7.00
    assert solution.usd_per_hour == pytest.approx(8.0)
    assert solution.total_replicas == 8 and solution.total_units == 1
    assert solution.binding == ("demand:b0", "min_replicas")
    assert round(solution.usd_per_hour * 100) == reference(redundant).cost_cents
    # Without redundancy the faster unit does dominate, and is the answer.
    lean = _packed_problem(0)
    lean_canon = canonicalize(lean)
    assert dominated(
        lean_canon, cols, need_units(lean_canon, cols), allow_cross_gpu=True
    ).tolist() == [False, True]
    assert solve_fleet(lean).units == (("h100|tp8", 1),)


@pytest.mark.parametrize("min_replicas", [1, 2, 7, 8, 9, 15, 16, 17, 30])
def test_replica_aware_pruning_on_the_milp_path(
    min_replicas: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three options (the MILP, not the exact path) and a cross-GPU competitor that is the
    cheapest per capacity: the answer equals brute force and the unpruned MILP."""
    other = FleetOption("l4|tp1", "l4", 1, 0.90, (9.0,))
    problem = _packed_problem(min_replicas, other)
    monkeypatch.setattr(exact_module, "MAX_EXACT_OPTIONS", 0)
    solution = solve_fleet(problem)
    check_fleet(problem, solution)
    want = reference(problem)
    assert (round(solution.usd_per_hour * 100), solution.total_cards) == (
        want.cost_cents,
        want.cards,
    )
    _no_pruning(monkeypatch)
    assert _summary(solve_fleet(problem)) == _summary(solution)


def test_same_group_dedup_keeps_units_with_more_replicas() -> None:
    """Same GPU, cards per unit and capacity, different replicas per unit: not the same unit.
    Enough filler options to run the grouped dedup (more than 16 options)."""
    one = FleetOption("h100|x8|tp8", "h100", 8, 7.00, (80.0,))
    eight = FleetOption("h100|x8|tp1", "h100", 8, 8.00, (80.0,), replicas_per_unit=8)
    fillers = tuple(
        FleetOption(f"a10|tp1|o{k:02d}", "a10", 1, 3.00 + k / 100, (2.0,)) for k in range(20)
    )
    problem = FleetProblem(
        buckets=(Bucket("b0", 1.0),), options=(one, eight, *fillers), min_replicas=8
    )
    canon = canonicalize(problem)
    cols = np.arange(len(canon.keys), dtype=np.int64)
    dropped = same_group_dominated(canon, cols, need_units(canon, cols))
    assert not dropped[canon.keys.index("h100|x8|tp1")]
    assert "h100|x8|tp1" in {canon.keys[g] for g in select(canon, Mode.COST).cols}
    assert solve_fleet(problem).units == (("h100|x8|tp1", 1),)
