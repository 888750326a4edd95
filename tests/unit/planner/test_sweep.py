"""Curves around a plan: cost vs load (a sweep that re-solves only the MILP and reuses a fleet
while it still carries the load), cost vs SLO, and per-GPU economics, checked against the
planner and against independent solves."""

from __future__ import annotations

import itertools
import math
from dataclasses import replace

import pytest

from service.domain.errors import InvalidInput
from service.domain.perfmodel import Slo
from service.domain.planner import PlanRequest, WorkloadBucket, plan
from service.domain.planner.candidates import build_candidates, fleet_problem
from service.domain.planner.request import MixingPolicy
from service.domain.planner.sweep import (
    LOAD_POINTS,
    LOAD_SPAN,
    PLAN_SERIES,
    SLO_FACTORS,
    cost_floor,
    cost_vs_load,
    cost_vs_slo,
    load_points,
    per_gpu,
)
from service.domain.solver import Bucket, solve_fleet, solve_single_type
from tests.unit.planner.test_planner import request, snapshot

MIX = (WorkloadBucket("b0", 0.7, 1000, 200), WorkloadBucket("b1", 0.3, 4000, 500))
GPUS = ("a100-sxm-80gb", "h100-sxm", "l40s")


def mixed(**overrides: object) -> PlanRequest:
    return request(
        model="llama-3.1-70b",
        qps=8.0,
        buckets=MIX,
        gpus=GPUS,
        **overrides,  # type: ignore[arg-type]
    )


def test_load_points_run_from_a_small_fraction_to_twice_the_request() -> None:
    r = mixed()
    points = load_points(r, None)
    assert len(points) == LOAD_POINTS
    assert points[-1] == pytest.approx(r.qps * LOAD_SPAN)
    assert points[0] == pytest.approx(r.qps * LOAD_SPAN / LOAD_POINTS)
    assert list(points) == sorted(points)
    assert r.qps in points  # the requested load is one of them
    further = load_points(r, r.qps * 3)  # a budget carrying more stretches the axis
    assert further[-1] == pytest.approx(r.qps * 3, rel=0.05)
    assert r.qps in further


def test_cost_vs_load_meets_the_plan_at_the_requested_load() -> None:
    r = mixed(headroom=0.1, min_replicas=2)
    curve = cost_vs_load(r, snapshot())
    solved = plan(r, snapshot())
    assert solved.fleet is not None
    series = {s.name: s for s in curve.series}
    at = [p.x for p in series[PLAN_SERIES].points].index(r.qps)
    assert series[PLAN_SERIES].points[at].usd_per_hour == pytest.approx(solved.fleet.usd_per_hour)
    for alternative in solved.alternatives:
        assert series[alternative.gpu].points[at].usd_per_hour == pytest.approx(
            alternative.fleet.usd_per_hour
        )


def test_cost_never_falls_with_load_and_the_mix_is_never_dearer() -> None:
    curve = cost_vs_load(mixed(), snapshot())
    plan_costs = [p.usd_per_hour for p in curve.series[0].points]
    assert curve.series[0].name == PLAN_SERIES
    for s in curve.series:
        costs = [p.usd_per_hour for p in s.points if p.usd_per_hour is not None]
        assert costs == sorted(costs), s.name
        for mine, theirs in zip(plan_costs, (p.usd_per_hour for p in s.points), strict=True):
            if theirs is not None:
                assert mine is not None and mine <= theirs + 1e-9


def test_reusing_a_fleet_gives_what_solving_every_point_gives() -> None:
    r = mixed(min_replicas=1)
    curve = cost_vs_load(r, snapshot())
    base = replace(fleet_problem(r, build_candidates(r, snapshot())), budget_usd_per_hour=None)
    assert curve.solves < LOAD_POINTS * len(curve.series)  # some points reused a fleet
    for s in curve.series:
        for p in s.points:
            factor = p.x / r.qps
            scaled = replace(
                base, buckets=tuple(Bucket(b.key, b.demand_qps * factor) for b in base.buckets)
            )
            alone = solve_fleet(scaled) if s.gpu is None else solve_single_type(scaled, s.gpu)
            expected = alone.usd_per_hour if alone.has_fleet else None
            assert p.usd_per_hour == pytest.approx(expected), (s.name, p.x)


def test_the_budget_is_ignored_by_the_curve_and_reported_beside_it() -> None:
    r = mixed(budget=1.0)
    curve = cost_vs_load(r, snapshot())
    assert curve.budget_usd_per_hour == 1.0
    assert any(p.usd_per_hour is not None and p.usd_per_hour > 1.0 for p in curve.series[0].points)


def test_cost_vs_slo_moves_each_limit_and_a_looser_one_is_never_dearer() -> None:
    r = mixed(slo=Slo(ttft_ms=3000, tpot_ms=60, e2e_ms=None, percentile=95))
    curve = cost_vs_slo(r, snapshot())
    assert [s.name for s in curve.series] == ["tpot_ms", "ttft_ms"]
    assert dict(curve.requested) == {"tpot_ms": 60, "ttft_ms": 3000}
    solved = plan(r, snapshot())
    assert solved.fleet is not None
    for s in curve.series:
        limit = dict(curve.requested)[s.name]
        assert [p.x for p in s.points] == pytest.approx([limit * f for f in SLO_FACTORS])
        at_request = s.points[SLO_FACTORS.index(1.0)].usd_per_hour
        assert at_request == pytest.approx(solved.fleet.usd_per_hour)
        known = [p.usd_per_hour for p in s.points]
        for tighter, looser in itertools.pairwise(known):
            if tighter is not None:  # feasible at a tighter limit: feasible and no dearer later
                assert looser is not None and looser <= tighter + 1e-9


def test_cost_vs_slo_needs_a_latency_limit_to_move() -> None:
    r = mixed(slo=Slo(ttft_ms=None, tpot_ms=None, e2e_ms=None, percentile=95))
    with pytest.raises(InvalidInput) as caught:
        cost_vs_slo(r, snapshot())
    assert caught.value.field == "slo.tpot_ms"


def test_per_gpu_prices_an_output_token_at_full_load() -> None:
    r = mixed()
    candidates = build_candidates(r, snapshot())
    table = per_gpu(r, candidates)
    assert table.rows, "some GPU serves the workload"
    costs = [row.usd_per_million_output_tokens for row in table.rows]
    assert costs == sorted(costs)
    assert len({row.gpu for row in table.rows}) == len(table.rows)
    mean_output = 0.7 * 200 + 0.3 * 500
    for row in table.rows:
        assert row.gpu in GPUS
        expected = row.usd_per_replica_hour / (row.max_qps_per_replica * mean_output * 3600) * 1e6
        assert row.usd_per_million_output_tokens == pytest.approx(expected)
        options = [
            c
            for c in candidates.items.values()
            if c.option.gpu_id == row.gpu
            and c.deployment.tensor_parallel == row.tensor_parallel
            and c.offer.instance_type == row.instance_type
        ]
        assert options
        caps = [cap.qps for cap in options[0].replica_capacity]
        mix_capacity = 1 / math.fsum(b.share / cap for b, cap in zip(r.buckets, caps, strict=True))
        assert row.max_qps_per_replica == pytest.approx(mix_capacity)


@pytest.mark.parametrize("savings", [0.0, 10.0, 60.0])
def test_the_plans_curve_alone_is_the_plans_curve_of_the_whole_chart(savings: float) -> None:
    """Without the single-type series the sweep skips solves its lower bounds rule out (a GPU
    no cheaper than the best single type so far, a mix the policy would not accept): the
    plan's own curve is the same, for fewer solves."""
    policy = MixingPolicy(max_gpu_types=2, min_mix_savings_percent=savings)
    r = mixed(mixing=policy)
    whole = cost_vs_load(r, snapshot())
    alone = cost_vs_load(r, snapshot(), single_types=False)
    assert [s.name for s in alone.series] == [PLAN_SERIES]
    assert [p.x for p in alone.series[0].points] == [p.x for p in whole.series[0].points]
    for mine, theirs in zip(alone.series[0].points, whole.series[0].points, strict=True):
        assert mine.usd_per_hour == pytest.approx(theirs.usd_per_hour, rel=1e-12)
    assert alone.solves < whole.solves


def test_acost_floor_never_exceeds_the_cheapest_fleet() -> None:
    r = mixed(min_replicas=3)
    base = replace(fleet_problem(r, build_candidates(r, snapshot())), budget_usd_per_hour=None)
    by_load, by_replicas = cost_floor(base)
    for factor in (0.05, 0.5, 1.0, 2.0):
        scaled = replace(
            base, buckets=tuple(Bucket(b.key, b.demand_qps * factor) for b in base.buckets)
        )
        cheapest = solve_fleet(scaled)
        assert cheapest.has_fleet
        assert 0.0 < max(by_load * factor, by_replicas) <= cheapest.usd_per_hour * (1 + 1e-12)
