"""Offers dominated on price within one GPU and instance shape never reach the MILP, and
leaving them out never changes the cheapest fleet."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from service.domain.catalog import CatalogSnapshot, PricePoint
from service.domain.perfmodel import Slo
from service.domain.planner import PlanRequest, WorkloadBucket, plan
from service.domain.planner.candidates import build_candidates
from service.domain.planner.offers import Offer, cheapest_per_shape, places_searched
from service.domain.planner.request import Spread
from service.usecases.seed_catalog import seed_snapshot
from tests.support.plan_requests import plan_request

WHEN = datetime(2026, 12, 1, tzinfo=UTC)


def offer(provider: str, usd: float, cards: int, region: str = "r1") -> Offer:
    return Offer("l4", provider, region, f"{provider}.{cards}x", "on_demand", usd, cards)


def test_one_offer_per_shape_survives_the_cheapest_and_ties_are_deterministic() -> None:
    offers = [offer("b", 1.0, 1), offer("a", 1.0, 1), offer("c", 0.9, 4), offer("d", 0.8, 4)]
    kept = cheapest_per_shape(offers)
    assert [(o.provider, o.cards_per_instance) for o in kept] == [("a", 1), ("d", 4)]
    assert cheapest_per_shape(list(reversed(offers))) == kept


def test_a_spread_request_keeps_the_cheapest_offer_of_each_shape_in_each_place() -> None:
    offers = [
        offer("a", 1.0, 1, "r1"),
        offer("a", 1.0, 1, "r2"),
        offer("a", 1.2, 1, "r2"),
        offer("b", 1.5, 1, "r9"),
        offer("a", 0.9, 4, "r1"),
    ]
    # one place: the cheapest of each shape
    assert [(o.provider, o.region, o.usd_per_card_hour) for o in cheapest_per_shape(offers)] == [
        ("a", "r1", 1.0),
        ("a", "r1", 0.9),
    ]
    # providers counted: the dearer provider's offer may be the second provider a fleet needs
    by_provider = cheapest_per_shape(offers, Spread(min_providers=2))
    assert [(o.provider, o.region, o.cards_per_instance) for o in by_provider] == [
        ("a", "r1", 1),
        ("b", "r9", 1),
        ("a", "r1", 4),
    ]
    # regions counted: the same price in another region is another region a fleet can use;
    # within a region the dearer offer of a shape still goes, and of the regions the two
    # cheapest are searched
    by_region = cheapest_per_shape(offers, Spread(min_regions=2))
    assert [(o.provider, o.region, o.usd_per_card_hour) for o in by_region] == [
        ("a", "r1", 1.0),
        ("a", "r2", 1.0),
        ("a", "r1", 0.9),
    ]
    by_three = cheapest_per_shape(offers, Spread(min_regions=3))
    assert ("b", "r9", 1.5) in [(o.provider, o.region, o.usd_per_card_hour) for o in by_three]
    assert cheapest_per_shape(list(reversed(offers)), Spread(min_regions=2)) == by_region


def test_a_region_spread_searches_as_many_regions_per_gpu_and_shape_as_it_asks_for() -> None:
    many = [offer(f"p{i % 3}", 1.0 + i / 100, 1, f"r{i:02d}") for i in range(10)]
    for k in (2, 3):
        kept = cheapest_per_shape(many, Spread(min_regions=k))
        assert places_searched(Spread(min_regions=k)) == k
        assert sorted(o.region for o in kept) == [f"r{i:02d}" for i in range(k)]
    readme = (Path(__file__).parents[3] / "README.md").read_text(encoding="utf-8")
    assert "the `min_regions` cheapest regions offering it" in readme


def price(gpu: str, provider: str, usd: float, cards: int, instance: str) -> PricePoint:
    return PricePoint(gpu, provider, "r1", "on_demand", usd, instance, cards, WHEN, "test")


@cache
def snapshot() -> CatalogSnapshot:
    return seed_snapshot()


def request(model: str, qps: float, **constraints: Any) -> PlanRequest:
    return plan_request(
        model=model,
        qps=qps,
        precision="fp8",
        kv_precision="fp8",
        buckets=(WorkloadBucket("b0", 0.6, 512, 128), WorkloadBucket("b1", 0.4, 4000, 300)),
        slo=Slo(ttft_ms=2000, tpot_ms=60, e2e_ms=None, percentile=95),
        **constraints,
    )


def test_the_bundled_catalog_gives_the_milp_a_few_options_per_gpu() -> None:
    on_demand = [p for p in snapshot().prices if p.kind == "on_demand"]
    options = build_candidates(request("llama-3.1-70b", 20.0), snapshot()).items
    assert len(on_demand) > 1000
    assert len(options) < 200
    per_gpu_tp: dict[tuple[str, int], set[int]] = {}
    for candidate in options.values():
        key = (candidate.option.gpu_id, candidate.deployment.tensor_parallel)
        shapes = per_gpu_tp.setdefault(key, set())
        assert candidate.offer.cards_per_instance not in shapes  # one offer per shape
        shapes.add(candidate.offer.cards_per_instance)


@pytest.mark.parametrize(
    ("model", "qps", "providers", "constraints"),
    [
        ("llama-3.1-8b", 30.0, None, {}),
        ("llama-3.1-70b", 12.0, None, {}),
        ("llama-3.1-70b", 12.0, ("aws", "gcp"), {}),
        ("llama-3.1-8b", 5.0, None, {"gpus": ("l4", "a10g", "l40s"), "min_replicas": 3}),
    ],
)
def test_pruning_never_changes_the_cheapest_fleet(
    model: str, qps: float, providers: tuple[str, ...] | None, constraints: dict[str, object]
) -> None:
    """Dearer copies of every offer (same GPU and shape, another provider) added to the
    catalog leave the cost of the plan where it was."""
    base = snapshot()
    extra = [replace(p, provider=p.provider + "-dear", usd=p.usd * 1.3) for p in base.prices]
    padded = CatalogSnapshot(revision=2, gpus=base.gpus, prices=base.prices + tuple(extra))
    with_dear = None if providers is None else (*providers, *(f"{p}-dear" for p in providers))
    cheap = plan(request(model, qps, providers=providers, **constraints), base)
    same = plan(request(model, qps, providers=with_dear, **constraints), padded)
    assert cheap.fleet is not None and same.fleet is not None
    assert same.fleet.usd_per_hour == pytest.approx(cheap.fleet.usd_per_hour, rel=1e-9)
    assert all(not line.provider.endswith("-dear") for line in same.fleet.lines)


def test_a_large_instance_dearer_per_card_than_a_smaller_one_is_kept_only_where_needed() -> None:
    gpus = tuple(g for g in snapshot().gpus if g.id == "h100-sxm")
    prices = (
        price("h100-sxm", "nebius", 2.0, 1, "x.1"),
        price("h100-sxm", "nebius", 2.5, 8, "x.8"),
    )
    candidates = build_candidates(
        request("llama-3.1-70b", 5.0, tensor_parallel=(1, 2, 4, 8)),
        CatalogSnapshot(revision=1, gpus=gpus, prices=prices),
    ).items
    by_tp = {(c.deployment.tensor_parallel, c.offer.instance_type) for c in candidates.values()}
    assert (1, "x.8") not in by_tp  # eight x.1 do the same job for less
    assert {tp for tp, inst in by_tp if inst == "x.8"} == {
        t for t in (2, 4, 8) if (t, "x.8") in by_tp
    }
    assert any(inst == "x.8" and tp > 1 for tp, inst in by_tp)


def test_a_larger_instance_elsewhere_stays_an_option_for_a_spread_fleet() -> None:
    # A smaller, cheaper instance of another provider does the large one's job for less, but
    # not in the large one's place: a fleet spread over providers may need that place.
    gpus = tuple(g for g in snapshot().gpus if g.id == "h100-sxm")
    prices = (
        price("h100-sxm", "nebius", 2.0, 1, "x.1"),
        price("h100-sxm", "lambda", 2.5, 8, "y.8"),
    )
    catalog = CatalogSnapshot(revision=1, gpus=gpus, prices=prices)

    def options(**constraints: Any) -> set[tuple[int, str]]:
        r = request("llama-3.1-8b", 5.0, tensor_parallel=(1, 2, 4, 8), **constraints)
        items = build_candidates(r, catalog).items.values()
        return {(c.deployment.tensor_parallel, c.offer.instance_type) for c in items}

    assert (1, "y.8") not in options()
    assert (1, "y.8") in options(spread=Spread(min_providers=2))
    assert (1, "y.8") in options(spread=Spread(min_regions=2))
