"""Redundancy made explicit: a one-replica fleet says it has none; otherwise the plan states
the share of the target load the fleet keeps after losing its worst line, provider or region."""

from __future__ import annotations

import pytest

from service.domain.planner import Plan, plan
from tests.unit.planner.test_planner import request, snapshot


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


def test_losing_a_line_leaves_the_other_lines_capacity() -> None:
    """One request shape: the fleet's capacity is the sum of its lines', so losing the line of
    largest capacity leaves the rest, as a share of the requested load."""
    qps = 120.0
    p = fleet_plan(qps=qps, gpus=("h100-sxm", "l40s"), max_cards=(("h100-sxm", 4),))
    assert p.fleet is not None and p.redundancy is not None
    lines = p.fleet.lines
    assert len(lines) >= 2
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
