"""Repository behaviour that the HTTP tests cannot see directly: as-of reads, concurrency."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from service.domain.catalog import PricePoint
from service.domain.errors import InvalidInput
from service.store.csv_format import bundled_text, parse_purchase_gaps_csv
from service.store.errors import ValueRefused
from service.store.repositories import CatalogRepository
from tests.support.seed import newest_seeded_observation, seeded_price_count

pytestmark = pytest.mark.integration

T0 = newest_seeded_observation() + timedelta(days=1)
"""After every seeded observation, so a snapshot as of any of the test's dates holds them all."""


def point(day: int, usd: float, *, provider: str = "examplecloud") -> PricePoint:
    return PricePoint(
        gpu_id="l4",
        provider=provider,
        region="r1",
        kind="on_demand",
        usd=usd,
        instance_type="ex.l4",
        gpus_per_instance=1,
        observed_at=T0 + timedelta(days=day),
        source="test",
    )


def offer_price(
    snapshot_prices: tuple[PricePoint, ...], provider: str = "examplecloud"
) -> float | None:
    found = [p.usd for p in snapshot_prices if p.gpu_id == "l4" and p.provider == provider]
    assert len(found) <= 1
    return found[0] if found else None


async def test_snapshot_as_of_picks_the_latest_price_known_then(engine: AsyncEngine) -> None:
    repo = CatalogRepository(engine)
    await repo.ingest_prices([point(0, 1.00), point(10, 0.80), point(20, 0.60)], datetime.now(UTC))
    now = await repo.snapshot()
    assert offer_price(now.prices) == 0.60
    assert offer_price((await repo.snapshot(as_of=T0 + timedelta(days=15))).prices) == 0.80
    assert offer_price((await repo.snapshot(as_of=T0 + timedelta(days=10))).prices) == 0.80
    assert offer_price((await repo.snapshot(as_of=T0)).prices) == 1.00
    assert offer_price((await repo.snapshot(as_of=T0 - timedelta(seconds=1))).prices) is None
    # The seeded offers are all observed before the test's dates, so each stays in every view.
    assert len((await repo.snapshot(as_of=T0)).prices) == len(now.prices)


async def test_concurrent_ingests_get_distinct_growing_revisions(engine: AsyncEngine) -> None:
    repo = CatalogRepository(engine)
    start = await repo.revision()
    batches = [
        [point(i, 1 + i / 100, provider=f"p{i}"), point(i, 2.0, provider=f"q{i}")]
        for i in range(12)
    ]
    results = await asyncio.gather(*(repo.ingest_prices(b, datetime.now(UTC)) for b in batches))
    revisions = sorted(r.revision for r in results)
    assert revisions == list(range(start + 1, start + 13))
    assert all(r.inserted == 2 for r in results)
    assert await repo.revision() == start + 12
    history = await repo.summary()
    assert history.price_points == seeded_price_count() + 24


async def test_duplicate_rows_inside_one_batch_count_once(engine: AsyncEngine) -> None:
    repo = CatalogRepository(engine)
    result = await repo.ingest_prices([point(3, 1.0), point(3, 1.0)], datetime.now(UTC))
    assert (result.inserted, result.already_present) == (1, 1)


async def test_long_ingests_report_progress(engine: AsyncEngine) -> None:
    repo = CatalogRepository(engine)
    points = [point(i % 28, 1.0 + i / 10_000, provider=f"p{i // 28}") for i in range(2_500)]
    seen: list[tuple[int, int]] = []
    result = await repo.ingest_prices(
        points, datetime.now(UTC), lambda done, total: seen.append((done, total))
    )
    assert result.inserted == 2_500
    assert seen == [(1000, 2500), (2000, 2500), (2500, 2500)]


@pytest.mark.parametrize(
    "bad",
    [
        {"source": "nul \x00 inside"},
        {"region": "r" * 100},  # VARCHAR(64)
        {"observed_at": datetime(9999, 12, 31, 23, 59, tzinfo=timezone(timedelta(hours=-23)))},
    ],
    ids=["nul", "too-long", "unbindable-moment"],
)
async def test_a_value_the_database_refuses_is_invalid_input_never_an_outage(
    engine: AsyncEngine, bad: dict[str, object]
) -> None:
    """The edge refuses these first; the repository still tells them from an outage. SQLite
    keeps NUL and long text where Postgres refuses them, which is why the edge checks both."""
    repo = CatalogRepository(engine)
    candidate = replace(point(1, 1.0), **bad)  # type: ignore[arg-type]
    sqlite_keeps = engine.dialect.name == "sqlite" and "observed_at" not in bad
    if sqlite_keeps:
        assert (await repo.ingest_prices([candidate], T0)).inserted == 1
        return
    with pytest.raises(ValueRefused) as caught:
        await repo.ingest_prices([candidate], T0)
    assert isinstance(caught.value, InvalidInput)
    assert (await repo.revision()) >= 1  # the database still answers


async def test_the_snapshot_carries_the_documented_price_gaps(engine: AsyncEngine) -> None:
    """The reasons migration 0011 stored come back with the catalog, as of any moment."""
    repo = CatalogRepository(engine)
    bundled = parse_purchase_gaps_csv(bundled_text("purchase_gaps.csv"))
    expected = {(g.gpu_id, "purchase"): g.reason for g in bundled}
    for snapshot in (await repo.snapshot(), await repo.snapshot(as_of=T0)):
        assert {(g.gpu_id, g.kind): g.reason for g in snapshot.gaps} == expected
        gap = bundled[0]
        assert snapshot.gap_reason(gap.gpu_id, "purchase") == gap.reason
        assert snapshot.gap_reason(gap.gpu_id, "on_demand") is None
