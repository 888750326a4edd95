"""A request kept to named regions: offers in them, and a provider's one-price-everywhere
(``global``) offer only where that provider is present in one of them; purchase prices have no
region and pass."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import cache

from service.domain.catalog import GLOBAL_REGION, CatalogSnapshot, GpuSpec, PricePoint
from service.domain.planner import PlanConstraints, plan
from service.domain.planner.offers import Offer, offers_for
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
