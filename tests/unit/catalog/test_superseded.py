"""A provider's "all regions" (global) price and its per-region prices of the same instance:
the newer statement is the current one."""

from __future__ import annotations

from datetime import UTC, datetime

from service.domain.catalog import PricePoint, latest_per_offer
from service.domain.superseded import gpu_only, without_superseded
from service.domain.vocabulary import PriceKindName
from service.store.csv_format import bundled_text, parse_prices_csv
from service.usecases.seed_catalog import seed_snapshot

OLD = datetime(2025, 4, 1, tzinfo=UTC)
NEW = datetime(2026, 6, 3, tzinfo=UTC)


def point(
    region: str, usd: float, when: datetime, instance: str = "gpu_8x_h100_sxm5"
) -> PricePoint:
    return PricePoint("h100-sxm", "lambda", region, "on_demand", usd, instance, 8, when, "test")


def current(*points: PricePoint) -> set[tuple[str, float]]:
    return {(p.region, p.usd) for p in without_superseded(latest_per_offer(list(points)))}


def test_a_newer_global_price_replaces_older_regional_ones() -> None:
    assert current(
        point("us-east-1", 2.99, OLD), point("asia-south-1", 2.99, OLD), point("global", 3.99, NEW)
    ) == {("global", 3.99)}


def test_newer_regional_prices_replace_an_older_global_one() -> None:
    assert current(point("global", 1.99, OLD), point("US", 2.49, NEW)) == {("US", 2.49)}


def test_other_instances_kinds_and_providers_are_untouched() -> None:
    other = point("us-east-1", 1.29, OLD, instance="gpu_1x_a10")
    spot = PricePoint(
        "h100-sxm", "lambda", "us-east-1", "spot", 1.0, "gpu_8x_h100_sxm5", 8, OLD, "t"
    )
    aws = PricePoint(
        "h100-sxm", "aws", "us-east-1", "on_demand", 9.0, "gpu_8x_h100_sxm5", 8, OLD, "t"
    )
    kept = without_superseded(latest_per_offer([other, spot, aws, point("global", 3.99, NEW)]))
    assert {(p.provider, p.kind, p.instance_type) for p in kept} == {
        ("lambda", "on_demand", "gpu_1x_a10"),
        ("lambda", "spot", "gpu_8x_h100_sxm5"),
        ("aws", "on_demand", "gpu_8x_h100_sxm5"),
        ("lambda", "on_demand", "gpu_8x_h100_sxm5"),
    }


def test_the_same_day_keeps_both() -> None:
    assert current(point("global", 3.99, NEW), point("us-east-1", 3.49, NEW)) == {
        ("global", 3.99),
        ("us-east-1", 3.49),
    }


def gcp(
    instance: str,
    usd: float,
    when: datetime,
    count: int = 1,
    region: str = "us-central1",
    kind: PriceKindName = "on_demand",
) -> PricePoint:
    return PricePoint("l4", "gcp", region, kind, usd, instance, count, when, "test")


GPU_ONLY = "g2-standard + 1x L4 (GPU only, host VM extra)"


def offers(*points: PricePoint) -> set[tuple[str, str, str, int]]:
    kept = without_superseded(latest_per_offer(list(points)))
    return {(p.region, p.kind, p.instance_type, p.gpus_per_instance) for p in kept}


def test_a_whole_machine_as_new_or_newer_replaces_the_gpus_priced_alone() -> None:
    """The GPU-only price leaves out the VM the GPU runs in: where a whole machine with as
    many of the same GPUs is known in the region, for the same kind of price and no older,
    only the machine is an offer (both spellings of GPU-only)."""
    for instance in (GPU_ONLY, "g2-standard-* (GPU component only)"):
        for when in (OLD, NEW):
            assert offers(gcp(instance, 0.56, when), gcp("g2-standard-4", 0.71, NEW)) == {
                ("us-central1", "on_demand", "g2-standard-4", 1)
            }


def test_the_gpus_priced_alone_stay_where_no_whole_machine_matches() -> None:
    """An older machine, another region, another kind of price or another GPU count leaves
    the GPU-only offer in place."""
    gpu_only = gcp(GPU_ONLY, 0.56, NEW)
    for whole in (
        gcp("g2-standard-4", 0.71, OLD),
        gcp("g2-standard-4", 0.71, NEW, region="us-east4"),
        gcp("g2-standard-4", 0.29, NEW, kind="spot"),
        gcp("g2-standard-24", 2.0, NEW, count=2),
    ):
        assert ("us-central1", "on_demand", GPU_ONLY, 1) in offers(gpu_only, whole)


def test_the_bundled_catalog_offers_gcp_l4_and_h100_as_whole_machines_where_priced() -> None:
    """Where ``prices.csv`` prices a whole GCP machine, no GPU-only offer of the same GPU, GPU
    count, region and kind is current in the seed catalog, and GCP's cheapest current L4 in
    us-central1 is the whole ``g2-standard-4``, dearer than the L4 alone."""
    rows = parse_prices_csv(bundled_text("prices.csv"))
    whole = {
        (p.gpu_id, p.region, p.kind, p.gpus_per_instance)
        for p in rows
        if p.provider == "gcp" and p.gpu_id in ("l4", "h100-sxm") and not gpu_only(p)
    }
    current = [p for p in seed_snapshot().prices if p.provider == "gcp"]
    assert whole
    for p in current:
        if gpu_only(p):
            assert (p.gpu_id, p.region, p.kind, p.gpus_per_instance) not in whole, p
    l4 = [p for p in current if p.gpu_id == "l4" and p.region == "us-central1"]
    cheapest = min((p for p in l4 if p.kind == "on_demand"), key=lambda p: p.usd)
    alone = [p for p in rows if p.gpu_id == "l4" and gpu_only(p) and p.region == "us-central1"]
    assert cheapest.instance_type == "g2-standard-4"
    assert alone and all(cheapest.usd > p.usd for p in alone)
