"""A request kept to named regions: offers in them, and a provider's one-price-everywhere
(``global``) offer only where that provider is present in one of them; purchase prices have no
region and pass."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import cache

from service.domain.catalog import GLOBAL_REGION, CatalogSnapshot, GpuSpec, PricePoint
from service.domain.planner import PlanConstraints, plan
from service.domain.planner.offers import Offer, offers_for
from service.domain.planner.request import Spread
from service.usecases.seed_catalog import seed_snapshot
from tests.support.plan_requests import plan_request

WHEN = datetime(2026, 7, 30, tzinfo=UTC)


@cache
def snapshot() -> CatalogSnapshot:
    return seed_snapshot()


def h100() -> GpuSpec:
    return snapshot().gpu_by_id["h100-sxm"]


def price(provider: str, region: str, kind: str = "reserved_1y", usd: float = 5.0) -> PricePoint:
    return PricePoint(
        gpu_id="h100-sxm",
        provider=provider,
        region=region,
        kind=kind,  # type: ignore[arg-type]
        usd=usd,
        instance_type=f"{provider}.8x",
        gpus_per_instance=8,
        observed_at=WHEN,
        source="https://example.org (test)",
    )


def places(offers: list[Offer]) -> set[tuple[str, str]]:
    return {(o.provider, o.region) for o in offers}


def test_a_global_price_counts_only_where_its_provider_is_present() -> None:
    prices = [
        price("aws", GLOBAL_REGION, usd=4.0),
        price("aws", "us-east-1", kind="on_demand", usd=7.0),
        price("gcp", "europe-west4", usd=6.0),
    ]
    reserved = PlanConstraints(pricing="reserved_1y", providers=("aws", "gcp"))
    europe = PlanConstraints(
        pricing="reserved_1y", providers=("aws", "gcp"), regions=("europe-west4",)
    )
    virginia = PlanConstraints(
        pricing="reserved_1y", providers=("aws", "gcp"), regions=("us-east-1",)
    )
    # no region asked: every offer
    everywhere, _ = offers_for(h100(), prices, reserved)
    assert places(everywhere) == {("aws", GLOBAL_REGION), ("gcp", "europe-west4")}
    # AWS has no europe-west4: its everywhere-price cannot be bought there
    kept, _ = offers_for(h100(), prices, europe)
    assert places(kept) == {("gcp", "europe-west4")}
    # AWS is present in us-east-1 (any GPU or kind shows it), so its global price holds there
    there, _ = offers_for(h100(), prices, virginia)
    assert places(there) == {("aws", GLOBAL_REGION)}
    # the snapshot's map of each provider's regions gives the same answer
    regions_of = CatalogSnapshot(revision=1, gpus=(h100(),), prices=tuple(prices)).provider_regions
    assert regions_of == {"aws": frozenset({"us-east-1"}), "gcp": frozenset({"europe-west4"})}
    assert offers_for(h100(), prices[:1], europe, regions_of=regions_of)[0] == []
    assert places(offers_for(h100(), prices[:1], virginia, regions_of=regions_of)[0]) == {
        ("aws", GLOBAL_REGION)
    }


def test_a_provider_with_no_named_region_has_nothing_in_a_region_filter() -> None:
    only_global = [price("coreweave", GLOBAL_REGION)]
    constraints = PlanConstraints(
        pricing="reserved_1y", providers=("coreweave",), regions=("us-east-1",)
    )
    offers, why = offers_for(h100(), only_global, constraints)
    assert offers == []
    assert why is not None and "allowed providers/regions" in why


def test_purchase_prices_have_no_region_and_pass_a_region_filter() -> None:
    owned = PlanConstraints(pricing="owned", regions=("europe-west4",))
    offers, why = offers_for(h100(), snapshot().prices, owned)
    assert why is None and offers
    assert {o.provider for o in offers} == {"street"}


def test_a_plan_kept_to_one_region_has_every_line_in_it() -> None:
    # The catalog's AWS p5 reserved rate names no region; it once landed in a plan kept to
    # europe-west4, a region AWS does not have.
    for pricing in ("reserved_1y", "on_demand"):
        request = plan_request(
            model="llama-3.1-70b", qps=10.0, pricing=pricing, regions=("europe-west4",)
        )
        p = plan(request, snapshot())
        assert p.status == "optimal" and p.fleet is not None, p.rejected
        assert {line.region for line in p.fleet.lines} == {"europe-west4"}


def test_a_region_spread_uses_named_regions_and_every_region_an_offer_is_sold_in() -> None:
    # RunPod sells the A100 80GB at one price in many regions: keeping only the first of them
    # once made a two-region fleet look infeasible, and region-less prices (coreweave,
    # runpod "global") were counted as regions of their own.
    for gpus in (("a100-sxm-80gb",), ("h100-sxm",)):
        p = plan(plan_request(qps=20.0, gpus=gpus, spread=Spread(min_regions=2)), snapshot())
        assert p.status == "optimal" and p.fleet is not None, p.explanation
        regions = {(line.provider, line.region) for line in p.fleet.lines}
        assert len(regions) >= 2 and all(r != GLOBAL_REGION for _, r in regions)
        assert p.redundancy is not None
        assert p.redundancy.without_worst_region_percent >= 100.0 - 1e-6
        assert any(a.startswith("Spread over regions: ") for a in p.assumptions)


def test_a_region_spread_prices_no_offer_without_a_region() -> None:
    only_global = [price("coreweave", GLOBAL_REGION)]
    spread = PlanConstraints(
        pricing="reserved_1y", providers=("coreweave",), spread=Spread(min_regions=2)
    )
    offers, why = offers_for(h100(), only_global, spread)
    assert offers == [] and why is not None and "spread.min_regions" in why
    # without the spread it is an offer like any other
    plain = PlanConstraints(pricing="reserved_1y", providers=("coreweave",))
    assert places(offers_for(h100(), only_global, plain)[0]) == {("coreweave", GLOBAL_REGION)}
