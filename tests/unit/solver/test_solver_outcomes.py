"""Typed outcomes: budget (over_budget + load within budget), infeasibility reasons, the time
limit, determinism, binding labels, validation, the mix example, the what-if savings and
multi-replica units (an instance billed whole that hosts several model replicas)."""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from service.domain.errors import InvalidInput
from service.domain.solver import (
    Bucket,
    FleetOption,
    FleetProblem,
    ReasonCode,
    SolveStatus,
    cheapest_single_type,
    max_qps_within_budget,
    relaxation_savings,
    solve_fleet,
    solve_single_type,
)
from service.domain.solver import exact as exact_module
from tests.unit.solver.solver_bruteforce import random_problem

SHORT_LONG = (Bucket("short", 60.0), Bucket("long", 6.0))


def short_long_problem(**kwargs: Any) -> FleetProblem:
    """A small card is cheapest for short requests but cannot hold long ones; a big card can."""
    options = (
        FleetOption("l4|tp1|gcp", "l4", 1, 0.80, (10.0, 0.0)),
        FleetOption("h100|tp1|aws", "h100", 1, 4.00, (40.0, 5.0)),
    )
    return FleetProblem(buckets=SHORT_LONG, options=options, **kwargs)


# --------------------------------------------------------------------------- mix example


def test_mix_is_strictly_cheaper_than_every_single_type() -> None:
    problem = short_long_problem()
    mixed = solve_fleet(problem)
    # long: 6 qps needs 2 h100 (1.2 replicas of work); their spare 0.8 replica-time serves
    # 32 short qps; the remaining 28 short qps need 3 l4. 2*4 + 3*0.8 = 10.4 USD/hour.
    assert mixed.status is SolveStatus.OPTIMAL
    assert mixed.units == (("h100|tp1|aws", 2), ("l4|tp1|gcp", 3))
    assert mixed.usd_per_hour == pytest.approx(10.4)
    alternatives = cheapest_single_type(problem)
    assert alternatives["l4"].status is SolveStatus.INFEASIBLE
    assert alternatives["l4"].reasons[0].code is ReasonCode.GPU_CANNOT_SERVE
    assert alternatives["l4"].reasons[0].buckets == ("long",)
    h100 = alternatives["h100"]
    assert h100.units == (("h100|tp1|aws", 3),)  # 60/40 + 6/5 = 2.7 -> 3
    assert mixed.usd_per_hour < h100.usd_per_hour
    single = solve_fleet(replace(problem, allow_mix=False))
    assert single.units == h100.units


# --------------------------------------------------------------------------- budget


def test_over_budget_returns_cheapest_fleet_and_load_that_fits() -> None:
    problem = short_long_problem(budget_usd_per_hour=8.0)
    cheapest = solve_fleet(replace(problem, budget_usd_per_hour=None))
    over = solve_fleet(problem)
    assert over.status is SolveStatus.OVER_BUDGET
    assert over.units == cheapest.units
    assert over.usd_per_hour == cheapest.usd_per_hour
    assert "budget" in over.binding
    assert over.reasons[-1].code is ReasonCode.BUDGET
    assert over.reasons[-1].shortfall == pytest.approx(over.usd_per_hour - 8.0)
    qps = over.max_qps_within_budget
    assert qps is not None
    assert qps == pytest.approx(max_qps_within_budget(problem))
    assert 0 < qps < problem.total_demand_qps
    scale = qps / problem.total_demand_qps
    scaled = replace(
        problem,
        buckets=tuple(replace(b, demand_qps=b.demand_qps * scale) for b in problem.buckets),
    )
    fits = solve_fleet(scaled)
    assert fits.status is SolveStatus.OPTIMAL
    assert fits.usd_per_hour <= 8.0
    # ... and it is the most: 1 % more does not fit.
    more = replace(
        problem,
        buckets=tuple(replace(b, demand_qps=b.demand_qps * scale * 1.01) for b in problem.buckets),
    )
    assert solve_fleet(more).status is SolveStatus.OVER_BUDGET


@pytest.mark.parametrize("seed", range(40))
def test_max_qps_within_budget_fits_the_budget(seed: int) -> None:
    rng = random.Random(seed)
    base = random_problem(seed, max_options=5)
    problem = replace(base, budget_usd_per_hour=rng.choice([2.0, 5.5, 12.0, 30.0]))
    qps = max_qps_within_budget(problem)
    if qps == 0.0:
        return
    scale = qps / problem.total_demand_qps
    scaled = replace(
        problem,
        buckets=tuple(replace(b, demand_qps=b.demand_qps * scale) for b in problem.buckets),
    )
    solution = solve_fleet(scaled)
    assert solution.status is SolveStatus.OPTIMAL, solution
    assert problem.budget_usd_per_hour is not None
    assert solution.usd_per_hour <= problem.budget_usd_per_hour


def test_within_budget_is_optimal_and_leaves_load_to_the_caller() -> None:
    solution = solve_fleet(short_long_problem(budget_usd_per_hour=100.0))
    assert solution.status is SolveStatus.OPTIMAL
    assert solution.max_qps_within_budget is None
    assert "budget" not in solution.binding


def test_budget_exactly_the_cost_is_within_budget() -> None:
    solution = solve_fleet(short_long_problem(budget_usd_per_hour=10.4))
    assert solution.status is SolveStatus.OPTIMAL
    assert "budget" in solution.binding


def test_max_qps_needs_a_budget_and_is_zero_without_demand() -> None:
    with pytest.raises(InvalidInput):
        max_qps_within_budget(short_long_problem())
    idle = replace(
        short_long_problem(budget_usd_per_hour=5.0),
        buckets=(Bucket("short", 0.0), Bucket("long", 0.0)),
    )
    assert max_qps_within_budget(idle) == 0.0


def test_budget_below_min_replicas_buys_nothing() -> None:
    problem = short_long_problem(budget_usd_per_hour=3.0, min_replicas=5)
    assert max_qps_within_budget(problem) == 0.0
    assert solve_fleet(problem).status is SolveStatus.OVER_BUDGET


def test_alternatives_apply_the_budget() -> None:
    alternatives = cheapest_single_type(
        short_long_problem(budget_usd_per_hour=11.0), with_max_qps=True
    )
    h100 = alternatives["h100"]
    assert h100.status is SolveStatus.OVER_BUDGET
    assert h100.max_qps_within_budget is not None
    assert h100.max_qps_within_budget < 66.0


# --------------------------------------------------------------------------- infeasible


def _codes(problem: FleetProblem) -> list[tuple[ReasonCode, str]]:
    solution = solve_fleet(problem)
    assert solution.status is SolveStatus.INFEASIBLE
    assert solution.units == () and solution.usd_per_hour == 0.0
    return [(r.code, r.subject) for r in solution.reasons]


def test_unservable_bucket_is_named() -> None:
    problem = FleetProblem(
        buckets=(Bucket("short", 5.0), Bucket("huge", 1.0)),
        options=(FleetOption("l4|tp1", "l4", 1, 1.0, (5.0, 0.0)),),
    )
    assert _codes(problem) == [(ReasonCode.UNSERVABLE_BUCKET, "huge")]


def test_card_cap_shortfall_is_counted() -> None:
    problem = short_long_problem(max_cards=(("h100", 1),))
    reasons = solve_fleet(problem).reasons
    assert [(r.code, r.subject, r.shortfall) for r in reasons] == [
        (ReasonCode.MAX_CARDS, "h100", 1.0)
    ]
    assert reasons[0].label == "max_cards:h100"


def test_replica_cap_shortfall_is_counted() -> None:
    options = (
        FleetOption("l4|tp1|gcp", "l4", 1, 0.80, (10.0, 0.0)),
        FleetOption("h100|tp1|aws", "h100", 1, 4.00, (40.0, 5.0), max_units=1),
    )
    problem = FleetProblem(buckets=SHORT_LONG, options=options)
    assert _codes(problem) == [(ReasonCode.MAX_UNITS, "h100|tp1|aws")]


def test_min_replicas_beyond_caps() -> None:
    problem = short_long_problem(min_replicas=20, max_cards=(("h100", 4), ("l4", 8)))
    assert (ReasonCode.MIN_REPLICAS, "") in _codes(problem)


def test_single_type_rule_is_blamed_when_a_mix_would_fit() -> None:
    problem = short_long_problem(allow_mix=False, max_cards=(("h100", 2),))
    codes = _codes(problem)
    assert (ReasonCode.SINGLE_TYPE, "") in codes
    assert (ReasonCode.MAX_CARDS, "h100") in codes


def test_no_single_type_covers_every_bucket() -> None:
    options = (
        FleetOption("a|tp1", "a", 1, 1.0, (5.0, 0.0)),
        FleetOption("b|tp1", "b", 1, 1.0, (0.0, 5.0)),
    )
    problem = FleetProblem(
        buckets=(Bucket("x", 1.0), Bucket("y", 1.0)), options=options, allow_mix=False
    )
    solution = solve_fleet(problem)
    assert solution.status is SolveStatus.INFEASIBLE
    assert solution.reasons[0].code is ReasonCode.NO_SINGLE_TYPE
    assert {(r.subject, r.buckets) for r in solution.reasons[1:]} == {("a", ("y",)), ("b", ("x",))}
    assert solve_fleet(replace(problem, allow_mix=True)).status is SolveStatus.OPTIMAL


def test_zero_demand_and_no_redundancy_is_an_empty_fleet() -> None:
    problem = replace(short_long_problem(), buckets=(Bucket("short", 0.0), Bucket("long", 0.0)))
    solution = solve_fleet(problem)
    assert solution.status is SolveStatus.OPTIMAL
    assert solution.units == () and solution.usd_per_hour == 0.0
    redundant = solve_fleet(replace(problem, min_replicas=2))
    assert redundant.units == (("l4|tp1|gcp", 2),)
    assert redundant.binding == ("min_replicas",)


# --------------------------------------------------------------------------- time limit


def hard_problem(seed: int, n_options: int = 120, n_buckets: int = 6) -> FleetProblem:
    """Many options with near-equal cost per capacity and odd granularities: hard to prove."""
    rng = random.Random(seed)
    buckets = tuple(Bucket(f"b{s}", rng.uniform(50, 400)) for s in range(n_buckets))
    options = []
    for g in range(n_options):
        speed = rng.uniform(1, 30)
        options.append(
            FleetOption(
                key=f"gpu{g:03d}|tp1",
                gpu_id=f"gpu{g:03d}",
                cards_per_unit=1,
                usd_per_hour=round(speed * rng.uniform(0.9, 1.1), 4),
                capacity_qps=tuple(
                    0.0 if rng.random() < 0.2 else speed * rng.uniform(0.5, 1.5)
                    for _ in range(n_buckets)
                ),
            )
        )
    return FleetProblem(buckets=buckets, options=tuple(options), time_limit_s=0.05)


def test_time_limit_is_respected() -> None:
    problem = hard_problem(7)
    start = time.perf_counter()
    solution = solve_fleet(problem)
    elapsed = time.perf_counter() - start
    assert elapsed < 3.0
    assert solution.status in (SolveStatus.TIME_LIMIT, SolveStatus.OPTIMAL, SolveStatus.INFEASIBLE)
    if solution.status is SolveStatus.TIME_LIMIT:
        assert solution.mip_gap > 0
        assert solution.units
        assert solution.reasons[0].code is ReasonCode.TIME_LIMIT
    if solution.status is SolveStatus.INFEASIBLE:
        assert [r.code for r in solution.reasons] == [ReasonCode.TIME_LIMIT]


# --------------------------------------------------------------------------- determinism


def _shuffled(problem: FleetProblem, seed: int) -> FleetProblem:
    rng = random.Random(seed)
    order = list(range(len(problem.buckets)))
    rng.shuffle(order)
    options = [
        replace(o, capacity_qps=tuple(o.capacity_qps[s] for s in order)) for o in problem.options
    ]
    rng.shuffle(options)
    return replace(
        problem,
        buckets=tuple(problem.buckets[s] for s in order),
        options=tuple(options),
        max_cards=tuple(reversed(problem.max_cards)),
    )


@pytest.mark.parametrize("seed", range(30))
def test_same_problem_same_bytes_in_any_order(seed: int) -> None:
    problem = replace(
        random_problem(seed, max_options=6), budget_usd_per_hour=4.0 if seed % 3 == 0 else None
    )
    first = solve_fleet(problem)
    assert solve_fleet(problem) == first
    assert repr(solve_fleet(_shuffled(problem, seed))) == repr(first)
    assert cheapest_single_type(_shuffled(problem, seed + 1)) == cheapest_single_type(problem)


def test_equal_cost_ties_prefer_fewer_cards() -> None:
    # Two tp1 replicas or one tp2 replica cost the same; tp1 x 1 + ... fewer cards wins.
    options = (
        FleetOption("a|tp2", "a", 2, 2.0, (10.0,)),
        FleetOption("a|tp1", "a", 1, 1.0, (4.0,)),
        FleetOption("b|tp1", "b", 1, 2.0, (10.0,)),
    )
    problem = FleetProblem(buckets=(Bucket("b0", 10.0),), options=options)
    solution = solve_fleet(problem)
    # 1 x a|tp2 (2 cards), 1 x b|tp1 (1 card) and 3 x a|tp1 (3 cards, 3.0) — cheapest 2.0
    assert solution.usd_per_hour == 2.0
    assert solution.total_cards == 1
    assert solution.units == (("b|tp1", 1),)


# --------------------------------------------------------------------------- binding, what-if


def test_binding_labels_and_relaxation_savings() -> None:
    options = (
        FleetOption("l4|tp1|gcp", "l4", 1, 0.80, (10.0, 0.0)),
        FleetOption("a10|tp1|aws", "a10", 1, 2.00, (20.0, 0.0)),
        FleetOption("h100|tp1|aws", "h100", 1, 4.00, (40.0, 5.0)),
    )
    problem = FleetProblem(buckets=SHORT_LONG, options=options, max_cards=(("l4", 1),))
    solution = solve_fleet(problem)
    # 2 h100 (long + 32 short) + 1 l4 (10 short, at the cap) + 1 a10 (18 short) = 10.8
    assert solution.usd_per_hour == pytest.approx(10.8)
    assert solution.binding == ("demand:long", "demand:short", "max_cards:l4")
    [(relaxed, saved)] = relaxation_savings(problem, solution)
    assert relaxed == "max_cards:l4" and saved == pytest.approx(0.4)


def test_a_cap_can_cost_without_binding() -> None:
    problem = short_long_problem(max_cards=(("l4", 2),))
    solution = solve_fleet(problem)
    assert solution.units == (("h100|tp1|aws", 3),)  # pushed off l4 entirely
    assert "max_cards:l4" not in solution.binding
    [(relaxed, saved)] = relaxation_savings(problem, solution)
    assert relaxed == "max_cards:l4" and saved == pytest.approx(1.6)


def test_utilization_and_served_rates() -> None:
    solution = solve_fleet(short_long_problem(headroom=0.5))
    served: dict[str, float] = {}
    for bucket, _, qps in solution.served_qps:
        served[bucket] = served.get(bucket, 0.0) + qps
    assert served == pytest.approx({"short": 90.0, "long": 9.0})
    assert all(0 < share <= 1 for _, share in solution.utilization)


def test_solve_single_type_rejects_unknown_gpu() -> None:
    with pytest.raises(InvalidInput):
        solve_single_type(short_long_problem(), "mi300x")
    assert solve_single_type(short_long_problem(), "h100").total_replicas == 3


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    "make",
    [
        lambda: Bucket("", 1.0),
        lambda: Bucket("b", -1.0),
        lambda: Bucket("b", math.nan),
        lambda: FleetOption("o", "g", 0, 1.0, (1.0,)),
        lambda: FleetOption("o", "g", 1, 0.0, (1.0,)),
        lambda: FleetOption("o", "g", 1, 1.0, (-1.0,)),
        lambda: FleetOption("o", "g", 1, 1.0, (1.0,), max_units=-1),
        lambda: FleetOption("o", "g", 1, 1.0, (1.0,), replicas_per_unit=0),
        lambda: FleetProblem((Bucket("b", 1.0),), (FleetOption("o", "g", 1, 1.0, (1.0, 2.0)),)),
        lambda: FleetProblem((Bucket("b", 1.0), Bucket("b", 2.0)), ()),
        lambda: FleetProblem(
            (Bucket("b", 1.0),),
            (FleetOption("o", "g", 1, 1.0, (1.0,)), FleetOption("o", "h", 1, 1.0, (1.0,))),
        ),
        lambda: FleetProblem((), (), headroom=-0.1),
        lambda: FleetProblem((), (), min_replicas=-1),
        lambda: FleetProblem((), (), max_cards=(("g", 1), ("g", 2))),
        lambda: FleetProblem((), (), max_cards=(("g", -1),)),
        lambda: FleetProblem((), (), budget_usd_per_hour=math.inf),
        lambda: FleetProblem((), (), time_limit_s=0.0),
    ],
)
def test_invalid_values_are_rejected(make: Callable[[], object]) -> None:
    with pytest.raises(InvalidInput):
        make()


@pytest.mark.parametrize("rpu", [0, -2])
def test_replicas_per_unit_must_be_positive(rpu: int) -> None:
    with pytest.raises(InvalidInput) as caught:
        FleetOption("o", "g", 8, 1.0, (1.0,), replicas_per_unit=rpu)
    assert caught.value.field == "replicas_per_unit"


# --------------------------------------------------------------------------- edges


def test_no_options_at_all() -> None:
    problem = FleetProblem(buckets=(Bucket("b0", 1.0),), options=())
    assert _codes(problem) == [(ReasonCode.UNSERVABLE_BUCKET, "b0")]
    assert cheapest_single_type(problem) == {}
    idle = FleetProblem(buckets=(Bucket("b0", 0.0),), options=(), min_replicas=2)
    assert _codes(idle) == [(ReasonCode.MIN_REPLICAS, "")]
    assert solve_fleet(replace(idle, min_replicas=0)).status is SolveStatus.OPTIMAL


def test_no_buckets_only_redundancy() -> None:
    options = (FleetOption("a|tp1", "a", 1, 1.0, ()), FleetOption("b|tp1", "b", 1, 2.0, ()))
    problem = FleetProblem(buckets=(), options=options, min_replicas=1)
    # An option that can serve no shape at all is never planned.
    assert _codes(problem) == [(ReasonCode.MIN_REPLICAS, "")]


def test_options_that_serve_no_demanded_shape_never_pad_redundancy() -> None:
    options = (
        FleetOption("cheap|tp1", "cheap", 1, 0.1, (5.0, 0.0)),
        FleetOption("big|tp1", "big", 1, 3.0, (5.0, 5.0)),
    )
    problem = FleetProblem(
        buckets=(Bucket("idle", 0.0), Bucket("busy", 4.0)), options=options, min_replicas=3
    )
    assert solve_fleet(problem).units == (("big|tp1", 3),)


# --------------------------------------------------------------------------- multi-replica units

# An 8-card instance hosting 8 replicas (billed whole) and a 1-card instance hosting one.
EIGHT = FleetOption("h100|x8", "h100", 8, 8.00, (80.0,), replicas_per_unit=8)
ONE = FleetOption("h100|x1", "h100", 1, 1.50, (10.0,))


def instances_problem(min_replicas: int, **kwargs: Any) -> FleetProblem:
    return FleetProblem(
        buckets=(Bucket("chat", 0.5),),
        options=(EIGHT, ONE),
        min_replicas=min_replicas,
        **kwargs,
    )


def test_two_replicas_are_two_small_instances() -> None:
    solution = solve_fleet(instances_problem(2))
    assert solution.status is SolveStatus.OPTIMAL
    assert solution.units == (("h100|x1", 2),)  # 2 x 1.50 = 3.00 < one 8-card at 8.00
    assert solution.model_replicas == (("h100|x1", 2),)
    assert solution.usd_per_hour == pytest.approx(3.0)
    assert (solution.total_units, solution.total_replicas, solution.total_cards) == (2, 2, 2)
    assert solution.binding == ("demand:chat", "min_replicas")


def test_eight_replicas_are_one_big_instance(monkeypatch: pytest.MonkeyPatch) -> None:
    solution = solve_fleet(instances_problem(8))
    assert solution.units == (("h100|x8", 1),)  # 8.00 < 8 x 1.50 = 12.00
    assert solution.model_replicas == (("h100|x8", 8),)
    assert solution.usd_per_hour == pytest.approx(8.0)
    assert (solution.total_units, solution.total_replicas, solution.total_cards) == (1, 8, 8)
    assert solution.binding == ("demand:chat", "min_replicas")
    [(option, share)] = solution.utilization
    assert option == "h100|x8" and share == pytest.approx(0.5 / 80.0)
    assert cheapest_single_type(instances_problem(8))["h100"] == solution
    # The same on the MILP path (the exact path takes scopes of one or two options).
    monkeypatch.setattr(exact_module, "MAX_EXACT_OPTIONS", 0)
    assert solve_fleet(instances_problem(8)) == solution
    assert solve_fleet(instances_problem(2)).units == (("h100|x1", 2),)


def test_nine_replicas_mix_instance_sizes() -> None:
    solution = solve_fleet(instances_problem(9))
    assert solution.units == (("h100|x1", 1), ("h100|x8", 1))  # 9.50
    assert solution.total_replicas == 9
    assert "min_replicas" in solution.binding


def test_min_replicas_shortfall_counts_model_replicas() -> None:
    """8 cards of "a": one 4-card instance hosts 4 replicas, a tp2 replica needs 2 cards. At
    most 2 x 4 = 8 replicas fit (picking the smallest cards per unit first would say 4)."""
    options = (
        FleetOption("a|tp2", "a", 2, 1.0, (5.0,)),
        FleetOption("a|x4", "a", 4, 3.0, (12.0,), replicas_per_unit=4),
    )
    problem = FleetProblem(
        buckets=(Bucket("b0", 1.0),), options=options, min_replicas=9, max_cards=(("a", 8),)
    )
    solution = solve_fleet(problem)
    assert solution.status is SolveStatus.INFEASIBLE
    first = solution.reasons[0]
    assert (first.code, first.shortfall) == (ReasonCode.MIN_REPLICAS, 1.0)
    fits = solve_fleet(replace(problem, min_replicas=8))
    assert fits.units == (("a|x4", 2),) and fits.total_replicas == 8
    assert "max_cards:a" in fits.binding


def test_min_replicas_knapsack_is_exact() -> None:
    """Odd card counts where no greedy order is right: 10 cards, units of 3 cards x 3 replicas,
    4 cards x 5 replicas, 6 cards x 7 replicas. Best: 6 + 4 cards = 12 replicas."""
    options = (
        FleetOption("a|c3", "a", 3, 1.0, (5.0,), replicas_per_unit=3),
        FleetOption("a|c4", "a", 4, 1.0, (5.0,), replicas_per_unit=5),
        FleetOption("a|c6", "a", 6, 1.0, (5.0,), replicas_per_unit=7),
    )
    problem = FleetProblem(
        buckets=(Bucket("b0", 1.0),), options=options, min_replicas=13, max_cards=(("a", 10),)
    )
    reasons = solve_fleet(problem).reasons
    assert (reasons[0].code, reasons[0].shortfall) == (ReasonCode.MIN_REPLICAS, 1.0)
    assert solve_fleet(replace(problem, min_replicas=12)).total_replicas == 12


def test_unit_cap_shortfall_is_in_units() -> None:
    capped = replace(EIGHT, max_units=1)
    problem = FleetProblem(buckets=(Bucket("chat", 0.5),), options=(capped,), min_replicas=20)
    reasons = solve_fleet(problem).reasons
    assert [(r.code, r.subject, r.shortfall) for r in reasons] == [
        (ReasonCode.MIN_REPLICAS, "", 12.0),  # the cap allows 8 replicas
        (ReasonCode.MAX_UNITS, "h100|x8", 2.0),  # 3 instances host 24 >= 20
    ]
    assert "units" in reasons[1].message
    at_cap = solve_fleet(replace(problem, min_replicas=8))
    assert at_cap.binding == ("demand:chat", "max_units:h100|x8", "min_replicas")


def test_budget_and_what_if_count_model_replicas() -> None:
    problem = instances_problem(8, budget_usd_per_hour=7.0)
    over = solve_fleet(problem)
    assert over.status is SolveStatus.OVER_BUDGET
    assert over.units == (("h100|x8", 1),)
    assert over.max_qps_within_budget == 0.0  # 4 x 1.50 hosts 4 replicas, not 8
    assert max_qps_within_budget(replace(problem, budget_usd_per_hour=8.0)) == pytest.approx(
        80.0, rel=1e-5
    )
    # One option left: the closed-form load-scaling path.
    alone = FleetProblem(
        buckets=(Bucket("chat", 0.5),), options=(EIGHT,), min_replicas=16, budget_usd_per_hour=8.0
    )
    assert max_qps_within_budget(alone) == 0.0
    assert max_qps_within_budget(replace(alone, min_replicas=8)) == pytest.approx(80.0, rel=1e-5)
    cheapest = solve_fleet(instances_problem(8))
    [(relaxed, saved)] = relaxation_savings(instances_problem(8), cheapest)
    assert relaxed == "min_replicas" and saved == pytest.approx(8.0 - 1.5)
