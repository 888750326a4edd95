"""The policy's solve that also prices the replica floors
(:func:`~service.domain.solver.solve_fleet_pricing_min_replicas`) answers exactly what the two
solves it stands for answer: :func:`solve_fleet` of the problem, and the ``min_replicas``
what-if of :func:`relaxed_costs`; and when the cheapest fleet without the floors keeps them, it
solves once."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from service.domain.solver import (
    Bucket,
    FleetOption,
    FleetProblem,
    FleetSolution,
    SolveStatus,
    relaxed_costs,
    solve_fleet,
    solve_fleet_pricing_min_replicas,
    whatif,
)
from service.domain.solver.min_cost import minimum_cost_fleet
from service.domain.solver.prune import Canon, IntArray, canonicalize
from tests.unit.solver.test_solver_laws import LAWS, problems


def same_solution(got: FleetSolution, want: FleetSolution) -> None:
    assert got.status is want.status
    assert got.usd_per_hour == pytest.approx(want.usd_per_hour, rel=1e-12, abs=1e-12)
    assert got.cards == want.cards
    assert got.total_replicas == want.total_replicas
    assert got.binding == want.binding
    assert got.max_qps_within_budget == want.max_qps_within_budget
    assert [r.code for r in got.reasons] == [r.code for r in want.reasons]


@LAWS
@given(problems(), st.sampled_from([0, 0, 2, 3]), st.sampled_from([None, 4.0, 40.0]))
def test_the_fleet_and_the_floors_what_if_are_those_of_the_two_solves(
    problem: FleetProblem, line_floor: int, budget: float | None
) -> None:
    problem = replace(problem, line_min_replicas=line_floor, budget_usd_per_hour=budget)
    solution, relaxed = solve_fleet_pricing_min_replicas(problem)
    same_solution(solution, solve_fleet(problem))
    want = relaxed_costs(problem, ("min_replicas",), infeasible_as_inf=True).get("min_replicas")
    if want is None:
        assert relaxed is None
    else:
        assert relaxed == pytest.approx(want, rel=1e-12, abs=1e-12) or (
            math.isinf(want) and relaxed == want
        )


def _option(key: str, usd: float, qps: float) -> FleetOption:
    return FleetOption(key=key, gpu_id=key, cards_per_unit=1, usd_per_hour=usd, capacity_qps=(qps,))


def _counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the cheapest-fleet solves the pricing solve runs."""
    calls: list[int] = []

    def counting(
        canon: Canon, gpu_id: str | None, *, known_fleet: IntArray | None = None
    ) -> FleetSolution:
        calls.append(1)
        return minimum_cost_fleet(canon, gpu_id, known_fleet=known_fleet)

    monkeypatch.setattr(whatif, "minimum_cost_fleet", counting)
    return calls


@pytest.mark.parametrize(
    ("demand", "floor", "solves", "cards", "floors_cost"),
    [
        # 10 req/s on 2 req/s cards: five cards of the cheaper GPU keep a floor of five
        # replicas (tight, so named binding as the problem's own solve names it): one solve
        (10.0, 5, 1, 5, 0.0),
        # 1 req/s: one card carries it; the floor asks for a second: solved again
        (1.0, 2, 2, 2, 1.0),
    ],
)
def test_solved_again_only_when_the_cheapest_fleet_without_the_floors_breaks_them(
    monkeypatch: pytest.MonkeyPatch,
    demand: float,
    floor: int,
    solves: int,
    cards: int,
    floors_cost: float,
) -> None:
    problem = FleetProblem(
        buckets=(Bucket("b0", demand),),
        options=(_option("a", 1.0, 2.0), _option("b", 1.5, 2.0)),
        min_replicas=floor,
        line_min_replicas=2,
    )
    calls = _counted(monkeypatch)
    solution, relaxed = solve_fleet_pricing_min_replicas(problem)
    assert len(calls) == solves
    assert solution.cards == (("a", cards),)
    assert relaxed is not None
    assert solution.usd_per_hour - relaxed == pytest.approx(floors_cost)
    assert "min_replicas" in solution.binding
    assert solution.binding == solve_fleet(problem).binding


@LAWS
@given(problems(), st.sampled_from([2, 3]))
def test_the_fleet_raised_to_the_floors_is_feasible_so_no_cheaper_than_the_optimum(
    problem: FleetProblem, line_floor: int
) -> None:
    """The bound handed to the solve with the floors (the fleet without them, each line raised
    to its floor) keeps the floors and the caps, and costs no less than the optimum."""
    problem = replace(problem, line_min_replicas=line_floor)
    canon = canonicalize(problem)
    loose = replace(
        canon, min_replicas=0, line_min_replicas=0, line_units=np.zeros_like(canon.line_units)
    )
    found = minimum_cost_fleet(loose, None)
    if found.status is not SolveStatus.OPTIMAL:
        return
    raised = whatif._raised_to_floors(canon, whatif._units(canon, found))
    if raised is None:
        return
    assert whatif._keeps_floors(canon, raised)
    assert bool(np.all(raised <= canon.unit_cap))
    best = solve_fleet(problem)
    assert best.has_fleet  # a feasible fleet exists: the raised one
    assert float(np.dot(canon.usd, raised)) >= best.usd_per_hour - 1e-9
