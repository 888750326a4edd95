"""Monotonic laws (Hypothesis, bounded and derandomised): more demand is never cheaper, more
capacity or another option is never dearer, a bigger budget never gives a worse status,
tighter caps are never cheaper, and a mix never costs more than any single type."""

from __future__ import annotations

import math
from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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

LAWS = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)

GPUS = ("a", "b", "c")


@st.composite
def problems(draw: st.DrawFn) -> FleetProblem:
    n_buckets = draw(st.integers(1, 3))
    buckets = tuple(
        Bucket(f"b{s}", draw(st.sampled_from([0.0, 0.5, 2.0, 5.5, 9.0, 14.0])))
        for s in range(n_buckets)
    )
    n_options = draw(st.integers(1, 5))
    options = []
    for g in range(n_options):
        gpu = draw(st.sampled_from(GPUS))
        tp = draw(st.sampled_from([1, 2, 4]))
        rpu = draw(st.sampled_from([1, 1, 2, 4]))  # replicas per billed unit
        caps = tuple(draw(st.sampled_from([0.0, 1.0, 2.5, 4.0, 7.0])) for _ in range(n_buckets))
        options.append(
            FleetOption(
                key=f"{gpu}|tp{tp}|r{rpu}|o{g}",
                gpu_id=gpu,
                cards_per_unit=tp * rpu,
                usd_per_hour=draw(st.sampled_from([0.5, 1.0, 1.25, 2.0, 3.4, 6.0])),
                capacity_qps=tuple(c * rpu for c in caps),
                max_units=draw(st.one_of(st.none(), st.integers(0, 6))),
                replicas_per_unit=rpu,
            )
        )
    max_cards = tuple(
        (gpu, draw(st.integers(0, 12)))
        for gpu in GPUS
        if draw(st.booleans()) and draw(st.booleans())
    )
    return FleetProblem(
        buckets=buckets,
        options=tuple(options),
        headroom=draw(st.sampled_from([0.0, 0.2])),
        min_replicas=draw(st.sampled_from([0, 0, 1, 3, 6])),
        max_cards=max_cards,
        allow_mix=draw(st.booleans()) or draw(st.booleans()),
    )


def cost(solution: FleetSolution) -> float:
    """USD/hour, +inf when there is no fleet."""
    assert solution.status is not SolveStatus.TIME_LIMIT
    return solution.usd_per_hour if solution.has_fleet else math.inf


def no_dearer(cheaper: float, dearer: float) -> bool:
    return cheaper <= dearer * (1 + 1e-12) + 1e-12


@LAWS
@given(problems(), st.data())
def test_more_demand_is_never_cheaper(problem: FleetProblem, data: st.DataObject) -> None:
    s = data.draw(st.integers(0, len(problem.buckets) - 1))
    extra = data.draw(st.sampled_from([0.5, 1.0, 3.0]))
    buckets = tuple(
        replace(b, demand_qps=b.demand_qps + extra) if i == s else b
        for i, b in enumerate(problem.buckets)
    )
    assert no_dearer(
        cost(solve_fleet(problem)), cost(solve_fleet(replace(problem, buckets=buckets)))
    )


@LAWS
@given(problems(), st.sampled_from([0.1, 0.5]))
def test_more_headroom_is_never_cheaper(problem: FleetProblem, more: float) -> None:
    bigger = replace(problem, headroom=problem.headroom + more)
    assert no_dearer(cost(solve_fleet(problem)), cost(solve_fleet(bigger)))


@LAWS
@given(problems(), st.data())
def test_higher_capacity_is_never_dearer(problem: FleetProblem, data: st.DataObject) -> None:
    g = data.draw(st.integers(0, len(problem.options) - 1))
    factor = data.draw(st.sampled_from([1.0, 1.5, 3.0]))
    bump = data.draw(st.sampled_from([0.0, 1.0]))
    options = tuple(
        replace(o, capacity_qps=tuple(c * factor + bump for c in o.capacity_qps)) if i == g else o
        for i, o in enumerate(problem.options)
    )
    assert no_dearer(
        cost(solve_fleet(replace(problem, options=options))), cost(solve_fleet(problem))
    )


@LAWS
@given(problems(), st.data())
def test_adding_an_option_is_never_dearer(problem: FleetProblem, data: st.DataObject) -> None:
    gpu = data.draw(st.sampled_from(GPUS))
    extra = FleetOption(
        key=f"{gpu}|extra",
        gpu_id=gpu,
        cards_per_unit=data.draw(st.sampled_from([1, 2])),
        usd_per_hour=data.draw(st.sampled_from([0.75, 2.0, 9.0])),
        capacity_qps=tuple(data.draw(st.sampled_from([0.0, 1.5, 6.0])) for _ in problem.buckets),
        max_units=data.draw(st.one_of(st.none(), st.integers(0, 3))),
    )
    more = replace(problem, options=(*problem.options, extra))
    assert no_dearer(cost(solve_fleet(more)), cost(solve_fleet(problem)))


@LAWS
@given(problems(), st.data())
def test_tighter_caps_are_never_cheaper(problem: FleetProblem, data: st.DataObject) -> None:
    gpu = data.draw(st.sampled_from(GPUS))
    limit = data.draw(st.integers(0, 8))
    cards = dict(problem.max_cards)
    cards[gpu] = min(cards.get(gpu, limit), limit)
    g = data.draw(st.integers(0, len(problem.options) - 1))
    cap = data.draw(st.integers(0, 4))
    options = tuple(
        replace(o, max_units=min(o.max_units if o.max_units is not None else cap, cap))
        if i == g
        else o
        for i, o in enumerate(problem.options)
    )
    tighter = replace(
        problem,
        options=options,
        max_cards=tuple(sorted(cards.items())),
        min_replicas=problem.min_replicas,
    )
    assert no_dearer(cost(solve_fleet(problem)), cost(solve_fleet(tighter)))
    more_redundancy = replace(problem, min_replicas=problem.min_replicas + 2)
    assert no_dearer(cost(solve_fleet(problem)), cost(solve_fleet(more_redundancy)))
    single = replace(problem, allow_mix=False)
    assert no_dearer(cost(solve_fleet(problem)), cost(solve_fleet(single)))


STATUS_RANK = {SolveStatus.OPTIMAL: 0, SolveStatus.OVER_BUDGET: 1, SolveStatus.INFEASIBLE: 2}


@LAWS
@given(problems(), st.sampled_from([0.5, 2.0, 6.0, 15.0]), st.sampled_from([0.5, 4.0, 20.0]))
def test_bigger_budget_never_gives_a_worse_status(
    problem: FleetProblem, budget: float, more: float
) -> None:
    small = solve_fleet(replace(problem, budget_usd_per_hour=budget))
    large = solve_fleet(replace(problem, budget_usd_per_hour=budget + more))
    assert STATUS_RANK[large.status] <= STATUS_RANK[small.status]
    if small.has_fleet:
        assert math.isclose(small.usd_per_hour, large.usd_per_hour)  # the fleet is the cheapest
    if problem.total_demand_qps > 0:
        q_small = max_qps_within_budget(replace(problem, budget_usd_per_hour=budget))
        q_large = max_qps_within_budget(replace(problem, budget_usd_per_hour=budget + more))
        assert q_small <= q_large * (1 + 1e-9) + 1e-9


@LAWS
@given(problems())
def test_mix_never_costs_more_than_any_single_type(problem: FleetProblem) -> None:
    mixed = solve_fleet(replace(problem, allow_mix=True))
    alternatives = cheapest_single_type(problem)
    assert set(alternatives) == {o.gpu_id for o in problem.options}
    feasible = [s.usd_per_hour for s in alternatives.values() if s.has_fleet]
    for alt in feasible:
        assert no_dearer(cost(mixed), alt)
    single = solve_fleet(replace(problem, allow_mix=False))
    if feasible:
        assert math.isclose(cost(single), min(feasible), rel_tol=1e-12)
    else:
        assert single.status is SolveStatus.INFEASIBLE
