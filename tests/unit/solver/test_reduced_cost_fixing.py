"""Reduced-cost fixing in ``highs.solve_milp`` never changes the optimum.

Random covering MILPs of the fleet model's shape (integer units with integral costs, a demand
row per shape, line-minimum binaries) are solved with the fixing step and without it; the
optima must agree, the fixing path must actually be taken, and a target below every integer
solution must fall back to the whole model rather than return a wrong answer.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from scipy import sparse

from service.domain.solver import highs
from service.domain.solver.highs import MilpModel, Outcome, solve_milp
from service.domain.solver.min_cost import solve_fleet
from service.domain.solver.whatif import _relaxed, constraint_labels
from tests.unit.solver.solver_bruteforce import random_problem


def covering_model(seed: int, options: int = 16, shapes: int = 3) -> MilpModel:
    """``min c.x + 0.w`` with ``cap x >= demand`` per shape and, for every option, a line
    minimum ``2 w <= x <= U w`` (``w`` binary)."""
    rng = np.random.default_rng(seed)
    cap = rng.uniform(0.5, 6.0, size=(shapes, options))
    cap[rng.random((shapes, options)) < 0.2] = 0.0
    cap[:, 0] = np.maximum(cap[:, 0], 0.5)  # option 0 serves every shape
    demand = rng.uniform(60.0, 400.0, size=shapes)
    cost = rng.integers(3, 60, size=options).astype(np.float64)
    upper = np.full(options, 200.0)
    rows: list[np.ndarray] = []
    lower: list[float] = []
    higher: list[float] = []
    for s in range(shapes):  # demand
        rows.append(np.concatenate([cap[s], np.zeros(options)]))
        lower.append(float(demand[s]))
        higher.append(np.inf)
    for g in range(options):  # x - 2 w >= 0 and x - U w <= 0
        at_least = np.zeros(2 * options)
        at_least[g], at_least[options + g] = 1.0, -2.0
        rows.append(at_least)
        lower.append(0.0)
        higher.append(np.inf)
        at_most = np.zeros(2 * options)
        at_most[g], at_most[options + g] = 1.0, -upper[g]
        rows.append(at_most)
        lower.append(-np.inf)
        higher.append(0.0)
    return MilpModel(
        c=np.concatenate([cost, np.zeros(options)]),
        a=sparse.csc_array(np.vstack(rows)),
        row_lower=np.asarray(lower),
        row_upper=np.asarray(higher),
        col_lower=np.zeros(2 * options),
        col_upper=np.concatenate([upper, np.ones(options)]),
        integrality=np.ones(2 * options, dtype=np.uint8),
    )


def whole(model: MilpModel, monkeypatch: pytest.MonkeyPatch) -> float:
    with monkeypatch.context() as m:
        m.setattr(highs, "FIXING_MIN_INTEGERS", 10**9)
        result = solve_milp(model, time_limit_s=30.0)
    assert result.outcome is Outcome.OPTIMAL
    return result.objective


@pytest.fixture
def fixed_calls(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Records, for every fixing attempt, whether it answered (True) or fell back."""
    calls: list[bool] = []
    original = highs._solve_fixed

    def spy(*args: object) -> highs.MilpResult | None:
        result = original(*args)  # type: ignore[arg-type]
        calls.append(result is not None)
        return result

    monkeypatch.setattr(highs, "_solve_fixed", spy)
    return calls


pytestmark = pytest.mark.skipif(
    highs._backend() is None, reason="fixing runs only through SciPy's HiGHS binding or wrapper"
)


@pytest.mark.parametrize("seed", range(40))
def test_fixing_keeps_the_optimum(
    seed: int, monkeypatch: pytest.MonkeyPatch, fixed_calls: list[bool]
) -> None:
    model = covering_model(seed)
    result = solve_milp(model, time_limit_s=30.0)
    assert result.outcome is Outcome.OPTIMAL
    assert result.objective == pytest.approx(whole(model, monkeypatch), abs=1e-6)
    assert result.x is not None
    assert np.all(model.a @ result.x >= model.row_lower - 1e-6)
    assert fixed_calls  # the model is large enough for the fixing step


def test_fixing_answers_most_models(
    monkeypatch: pytest.MonkeyPatch, fixed_calls: list[bool]
) -> None:
    for seed in range(40):
        solve_milp(covering_model(seed), time_limit_s=30.0)
    assert len(fixed_calls) == 40
    assert sum(fixed_calls) >= 25  # the reduced model usually proves the optimum


@pytest.mark.parametrize("seed", range(10))
def test_a_target_at_the_lp_bound_falls_back(
    seed: int, monkeypatch: pytest.MonkeyPatch, fixed_calls: list[bool]
) -> None:
    """Margin 0: the target is the LP bound, below every integer fleet when the relaxation has
    a gap, so the reduced model proves nothing and the whole model is solved."""
    model = covering_model(seed)
    expected = whole(model, monkeypatch)
    relaxed = solve_milp(
        replace(model, integrality=np.zeros_like(model.integrality)), time_limit_s=30.0
    )
    monkeypatch.setattr(highs, "FIXING_MARGIN", 0.0)
    result = solve_milp(model, time_limit_s=30.0)
    assert result.objective == pytest.approx(expected, abs=1e-6)
    gap = expected > relaxed.objective + 1e-6
    assert fixed_calls == ([False] if gap else [True])


@pytest.mark.parametrize("seed", range(10))
def test_a_known_value_tightens_the_target(
    seed: int, monkeypatch: pytest.MonkeyPatch, fixed_calls: list[bool]
) -> None:
    """The optimum itself as ``known_value``: the tightest target that can still prove it
    (where no column's bound exceeds it, nothing is fixed and the whole model is solved)."""
    model = covering_model(seed)
    expected = whole(model, monkeypatch)
    result = solve_milp(model, time_limit_s=30.0, known_value=expected)
    assert result.objective == pytest.approx(expected, abs=1e-6)
    assert len(fixed_calls) == 1


def test_small_models_skip_fixing(monkeypatch: pytest.MonkeyPatch, fixed_calls: list[bool]) -> None:
    model = covering_model(3, options=4)  # 8 integer columns
    assert solve_milp(model, time_limit_s=30.0).outcome is Outcome.OPTIMAL
    assert fixed_calls == []


@pytest.mark.parametrize("seed", range(30))
def test_a_known_fleet_bounds_the_what_if_solves_without_changing_them(seed: int) -> None:
    """What-if re-solves pass the plan's own cost as a known fleet (it stays feasible with a
    constraint removed); the cheapest relaxed cost is the one found without it."""
    problem = random_problem(seed, max_options=14, max_buckets=3, multi_replica=True)
    solution = solve_fleet(problem)
    if not solution.has_fleet:
        return
    for label in constraint_labels(problem):
        relaxed = _relaxed(replace(problem, budget_usd_per_hour=None), label)
        assert relaxed is not None
        plain = solve_fleet(relaxed, cost_only=True)
        bounded = solve_fleet(relaxed, cost_only=True, known_usd_per_hour=solution.usd_per_hour)
        assert bounded.status == plain.status
        assert bounded.usd_per_hour == pytest.approx(plain.usd_per_hour, abs=1e-9)
        assert bounded.usd_per_hour <= solution.usd_per_hour + 1e-9


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("relax", [False, True])
def test_the_binding_and_the_wrapper_give_the_same_answers(seed: int, relax: bool) -> None:
    """The direct binding path and SciPy's private wrapper: the same status, objective and
    point, and on LPs the same row duals and lower-bound reduced costs."""
    if highs._CORE is None or highs._PRIVATE_WRAPPER is None:
        pytest.skip("needs both SciPy paths")
    model = covering_model(seed)
    if relax:
        model = replace(model, integrality=np.zeros_like(model.integrality))
    core = highs._solve_core(model, 30.0)
    wrapped = highs._solve_private(highs._PRIVATE_WRAPPER, model, 30.0)
    assert core.outcome is wrapped.outcome is Outcome.OPTIMAL
    assert core.objective == pytest.approx(wrapped.objective, rel=1e-12)
    assert core.x is not None and wrapped.x is not None
    np.testing.assert_allclose(core.x, wrapped.x, atol=1e-9)
    if relax:
        assert core.row_dual is not None and wrapped.row_dual is not None
        np.testing.assert_allclose(core.row_dual, wrapped.row_dual, atol=1e-9)
        assert core.reduced_cost is not None and wrapped.reduced_cost is not None
        np.testing.assert_allclose(core.reduced_cost, wrapped.reduced_cost, atol=1e-9)


def test_a_known_value_below_the_optimum_is_not_trusted(monkeypatch: pytest.MonkeyPatch) -> None:
    """HiGHS answers a bound below the optimum with some worse point labelled optimal; a wrong
    ``known_value`` must still give the optimum."""
    model = covering_model(1)
    optimum = whole(model, monkeypatch)
    for known in (optimum - 1.0, 0.5 * optimum):
        assert solve_milp(model, time_limit_s=30.0, known_value=known).objective == (
            pytest.approx(optimum)
        )
    impossible = replace(model, col_upper=np.zeros_like(model.col_upper))
    assert solve_milp(impossible, time_limit_s=30.0).outcome is Outcome.INFEASIBLE
