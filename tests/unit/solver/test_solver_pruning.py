"""Dominance pruning and the exact small-scope path never change the answer: checked against
the plain MILP on catalog-shaped instances too big for brute force."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from service.domain.solver import (
    FleetSolution,
    SolveStatus,
    cheapest_single_type,
    max_qps_within_budget,
    solve_fleet,
)
from service.domain.solver import candidates as candidates_module
from service.domain.solver import exact as exact_module
from service.domain.solver.candidates import Mode, canonicalize, select
from tests.unit.solver.solver_bruteforce import catalog_problem
from tests.unit.solver.test_solver_oracle import check_fleet


def _no_pruning(monkeypatch: pytest.MonkeyPatch) -> None:
    def keep_all(canon: object, cols: np.ndarray, *args: object, **kwargs: object) -> np.ndarray:
        return np.zeros(cols.size, dtype=np.bool_)

    monkeypatch.setattr(candidates_module, "dominated", keep_all)
    monkeypatch.setattr(candidates_module, "same_group_dominated", keep_all)


def _summary(solution: FleetSolution) -> tuple[SolveStatus, int, int]:
    return solution.status, round(solution.usd_per_hour * 100), solution.total_cards


@pytest.mark.parametrize("seed", range(25))
def test_pruning_keeps_cost_and_cards(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    problem = catalog_problem(seed)
    canon = canonicalize(problem)
    assert select(canon, Mode.COST).size <= len(problem.options)
    pruned = solve_fleet(problem)
    if pruned.has_fleet:
        check_fleet(problem, pruned)
    _no_pruning(monkeypatch)
    assert _summary(solve_fleet(problem)) == _summary(pruned)


@pytest.mark.parametrize("seed", range(12))
def test_pruning_keeps_max_qps_within_budget(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    problem = replace(catalog_problem(seed, n_gpus=5), budget_usd_per_hour=25.0 + 10 * seed)
    pruned = max_qps_within_budget(problem)
    _no_pruning(monkeypatch)
    assert max_qps_within_budget(problem) == pytest.approx(pruned, rel=1e-6, abs=1e-9)


@pytest.mark.parametrize("seed", range(15))
def test_exact_path_equals_milp(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    problem = catalog_problem(100 + seed)
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
