"""Redundancy made explicit: a one-replica fleet says it has none; otherwise the plan states
the share of the target load the fleet keeps after losing its worst line, provider or region."""

from __future__ import annotations

import pytest

from service.domain.planner import Plan, Spread, WorkloadBucket, plan
from service.usecases.seed_catalog import seed_snapshot
from tests.unit.planner.test_planner import request, snapshot

MIX = (WorkloadBucket("b0", 0.8, 512, 128), WorkloadBucket("b1", 0.2, 4000, 256))


def fleet_plan(**constraints: object) -> Plan:
    p = plan(request(**constraints), snapshot())  # type: ignore[arg-type]
    assert p.fleet is not None and p.redundancy is not None
    return p


def test_a_single_replica_plan_says_it_has_no_redundancy() -> None:
    p = fleet_plan(qps=0.5, gpus=("h100-sxm",))
    assert p.fleet is not None and p.redundancy is not None
    assert sum(x.replicas for x in p.fleet.lines) == 1
    assert p.redundancy.replicas == 1
    assert p.redundancy.without_worst_line_percent == 0.0
    assert any(s.startswith("Redundancy: none") for s in p.explanation)


def test_two_replicas_on_one_line_survive_nothing_but_a_card() -> None:
    p = fleet_plan(qps=0.5, gpus=("h100-sxm",), min_replicas=2)
    r = p.redundancy
    assert r is not None and r.replicas >= 2 and r.lines == 1
    assert r.without_worst_line_percent == 0.0  # the line is the whole fleet
    sentence = next(s for s in p.explanation if s.startswith("Redundancy"))
    assert "one line" in sentence and "one provider" in sentence


def _capped(qps: float) -> Plan:
    return fleet_plan(qps=qps, gpus=("h100-sxm", "l40s"), max_cards=(("h100-sxm", 4),))


def _lines(p: Plan) -> int:
    return len(p.fleet.lines) if p.fleet is not None else 0


def test_losing_a_line_leaves_the_other_lines_capacity() -> None:
    """One request shape: the fleet's capacity is the sum of its lines', so losing the line of
    largest capacity leaves the rest, as a share of the requested load (at the first load where
    four H100 no longer suffice and the fleet has two lines)."""
    qps, p = next(
        (q, p) for q in (60.0, 90.0, 120.0, 150.0, 180.0, 240.0) if _lines(p := _capped(q)) >= 2
    )
    assert p.fleet is not None and p.redundancy is not None
    lines = p.fleet.lines
    total = sum(x.qps_capacity for x in lines)
    expected = (total - max(x.qps_capacity for x in lines)) / qps * 100
    assert p.redundancy.without_worst_line_percent == pytest.approx(expected, rel=1e-6)
    providers = {x.provider for x in lines}
    assert p.redundancy.providers == len(providers)
    if len(providers) > 1:
        by_provider = {
            prov: sum(x.qps_capacity for x in lines if x.provider == prov) for prov in providers
        }
        left = (total - max(by_provider.values())) / qps * 100
        assert p.redundancy.without_worst_provider_percent == pytest.approx(left, rel=1e-6)


def test_spread_over_providers_survives_losing_any_one() -> None:
    """Asked for two providers, the fleet spans at least two and what is left after losing
    the worst one still carries the whole target load (the redundancy statement says so)."""
    p = fleet_plan(qps=20.0, gpus=("h100-sxm", "l40s"), spread=Spread(min_providers=2))
    r = p.redundancy
    assert r is not None and r.providers >= 2
    assert r.without_worst_provider_percent >= 100.0 - 1e-6
    alone = fleet_plan(qps=20.0, gpus=("h100-sxm", "l40s"))
    assert p.fleet is not None and alone.fleet is not None
    assert p.fleet.usd_per_hour > alone.fleet.usd_per_hour
    assert any(
        s.startswith("Spread (min_providers=2, min_regions=1) adds $") for s in p.explanation
    )


def test_a_spread_fleet_serves_on_every_line() -> None:
    """Two request shapes: the lines kept for losing a provider serve traffic too (the
    assignment is spread over every line, active-active), and it still adds up to the load."""
    p = fleet_plan(qps=20.0, buckets=MIX, gpus=("h100-sxm",), spread=Spread(min_providers=2))
    assert p.fleet is not None
    assert all(line.assigned_qps > 0 for line in p.fleet.lines)
    assert sum(line.assigned_qps for line in p.fleet.lines) == pytest.approx(20.0)


def test_spread_over_regions_survives_losing_any_one() -> None:
    p = fleet_plan(qps=20.0, gpus=("h100-sxm",), spread=Spread(min_regions=3))
    r = p.redundancy
    assert r is not None and r.regions >= 3
    assert r.without_worst_region_percent >= 100.0 - 1e-6


def test_a_spread_one_provider_cannot_give_is_infeasible_naming_the_setting() -> None:
    p = plan(
        request(qps=5.0, gpus=("h100-sxm",), providers=("lambda",), spread=Spread(min_providers=2)),
        snapshot(),
    )
    assert p.status == "infeasible" and p.fleet is None and p.redundancy is None
    assert any("spread.min_providers is 2 but only 1 providers" in s for s in p.explanation)


def _offers_of_one_type(qps: float) -> Plan:
    return plan(
        request(
            model="llama-3.1-70b",
            precision="fp8",
            qps=qps,
            gpus=("mi300x",),
            buckets=(WorkloadBucket("b0", 1.0, 1024, 256),),
        ),
        seed_snapshot(),  # the bundled catalog: MI300X sold as 1- and 8-card instances
    )


def _repeats_a_type(p: Plan) -> bool:
    types = [(x.gpu, x.tensor_parallel) for x in p.fleet.lines] if p.fleet else []
    return len(types) > len(set(types))


def test_a_replica_types_capacity_is_stated_once_however_many_offers_sell_it() -> None:
    """One GPU type sold as 1- and 8-card instances: at the first load that needs both, two
    lines of the same replica (GPU, tensor parallel); its capacity per bucket is one sentence,
    since a replica carries the same load whoever sells the cards."""
    p = next(
        p
        for q in (10.0, 15.0, 20.0, 25.0, 30.0, 35.0, 40.0, 45.0, 50.0, 55.0)
        if _repeats_a_type(p := _offers_of_one_type(q))
    )
    assert p.fleet is not None
    capacity = [s for s in p.explanation if " replica carries at most " in s]
    assert (
        len(capacity)
        == len(set(capacity))
        == len({(x.gpu, x.tensor_parallel, b) for x in p.fleet.lines for b, _ in x.buckets})
    )
