"""A cutoff (``highs.solve_milp``) only searches points at most that objective: below the
optimum the answer is ``CUT_OFF`` (never a point, never "infeasible"); at or above it the
optimum comes back as without one; and a known point within the cutoff makes it moot. Through
:func:`cheapest_fleet_beating` a scope answers its own cheapest fleet when that ranks before
the fleet to beat (cheaper, or as cheap with fewer cards), else ``None``."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from service.domain.solver import highs
from service.domain.solver.highs import Outcome, solve_milp
from service.domain.solver.min_cost import cheapest_fleet_beating, minimum_cost_fleet
from service.domain.solver.prune import canonicalize
from tests.unit.solver.solver_bruteforce import catalog_problem, random_problem
from tests.unit.solver.test_reduced_cost_fixing import covering_model

pytestmark = pytest.mark.skipif(
    highs._backend() is None, reason="the cutoff runs through SciPy's HiGHS binding or wrapper"
)


# 16 options: reduced-cost fixing first (its LP bound and reduced model); 4: one bounded run
@pytest.mark.parametrize("options", [4, 16])
@pytest.mark.parametrize("seed", range(10))
def test_a_cutoff_below_the_optimum_cuts_off_and_at_it_finds_it(options: int, seed: int) -> None:
    model = covering_model(seed, options=options)
    whole = solve_milp(model, time_limit_s=30.0)
    assert whole.outcome is Outcome.OPTIMAL
    best = whole.objective
    below = solve_milp(model, time_limit_s=30.0, cutoff=best - 1.0)
    assert below.outcome is Outcome.CUT_OFF and below.x is None
    for cutoff in (best, best + 1.0, best * 2.0):
        found = solve_milp(model, time_limit_s=30.0, cutoff=cutoff)
        assert found.outcome is Outcome.OPTIMAL
        assert found.objective == pytest.approx(best)


@pytest.mark.parametrize("seed", range(6))
def test_a_known_point_within_the_cutoff_makes_it_moot(seed: int) -> None:
    model = covering_model(seed)
    best = solve_milp(model, time_limit_s=30.0).objective
    # a known value at most the cutoff: that point is better, so the cutoff cannot bind
    found = solve_milp(model, time_limit_s=30.0, known_value=best, cutoff=best + 5.0)
    assert found.outcome is Outcome.OPTIMAL and found.objective == pytest.approx(best)


def test_far_above_the_lp_bound_the_lp_alone_cuts_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """A cutoff below the LP relaxation's optimum needs no branch and bound: one LP."""
    model = covering_model(3)
    original = highs._backend()
    assert original is not None
    calls: list[bool] = []

    def backend(m: highs.MilpModel, limit: float, bound: float | None) -> highs.MilpResult:
        calls.append(bool(m.integrality.any()))
        return original(m, limit, bound)

    relaxed = solve_milp(replace(model, integrality=model.integrality * 0), time_limit_s=30.0)
    monkeypatch.setattr(highs, "_backend", lambda: backend)
    cut = solve_milp(model, time_limit_s=30.0, cutoff=math.floor(relaxed.objective) - 1.0)
    assert cut.outcome is Outcome.CUT_OFF
    assert calls == [False]


@pytest.mark.parametrize("seed", range(40))
def test_a_scope_answers_only_a_fleet_ranking_before_the_one_to_beat(seed: int) -> None:
    # catalog-shaped scopes reach the MILP; small ones the closed forms
    problem = (
        catalog_problem(seed, packed=seed % 2 == 1)
        if seed < 20
        else random_problem(seed, max_options=6, multi_replica=True)
    )
    canon = canonicalize(problem)
    own = minimum_cost_fleet(canon, None)
    if not own.has_fleet:  # no fleet at all: none to come back (infeasible, or cut off)
        found = cheapest_fleet_beating(canon, (1e9, 1e9))
        assert found is None or not found.has_fleet
        return
    if own.usd_per_hour <= 0.0:
        return  # nothing demanded: the empty fleet
    rank = (own.usd_per_hour, float(own.total_cards))
    # the scope's own fleet does not rank before itself, nor before anything cheaper
    assert cheapest_fleet_beating(canon, rank) is None
    assert cheapest_fleet_beating(canon, (own.usd_per_hour * 0.99, math.inf)) is None
    # as cheap with one card more, or any dearer fleet: the scope's own optimum comes back
    for beat in ((own.usd_per_hour, rank[1] + 1.0), (own.usd_per_hour * 1.01 + 0.01, 0.0)):
        found = cheapest_fleet_beating(canon, beat)
        assert found is not None
        assert (found.usd_per_hour, found.total_cards) == (own.usd_per_hour, own.total_cards)
        assert found.units == own.units
