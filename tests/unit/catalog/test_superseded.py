"""A provider's "all regions" (global) price and its per-region prices of the same instance:
the newer statement is the current one."""

from __future__ import annotations

from datetime import UTC, datetime

from service.domain.catalog import PricePoint, latest_per_offer
from service.domain.superseded import without_superseded

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
