"""The README's purchase and reserved price table: what an owned plan is costed at per GPU, the
published reserved rates, and why a GPU has no purchase price."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from service.domain.catalog import PricePoint
from service.readme_price_coverage import (
    bundled_price_coverage,
    price_coverage,
    purchase_gaps,
    seed_catalog_summary,
)
from service.store.csv_format import bundled_text, parse_gpus_csv
from service.store.skypilot_seed import FIRST_SNAPSHOT, V9_FILES
from tests.support.seed import hand_entered_count, seeded_gpu_count, seeded_price_count

GPUS = {g.id: g for g in parse_gpus_csv(bundled_text("gpus.csv"))}


def point(gpu: str, kind: str, usd: float, day: int, instance: str = "card") -> PricePoint:
    provider = "street" if kind == "purchase" else "aws"
    return PricePoint(
        gpu_id=gpu,
        provider=provider,
        region="global",
        kind=kind,  # type: ignore[arg-type]
        usd=usd,
        instance_type=instance,
        gpus_per_instance=1,
        observed_at=datetime(2026, 1, day, tzinfo=UTC),
        source="https://example.org (test)",
    )


def row(table: str, gpu: str) -> list[str]:
    (line,) = [x for x in table.splitlines() if x.startswith(f"| `{gpu}` |")]
    return [cell.strip() for cell in line.strip("|").split("|")]


def test_a_gpu_is_shown_at_its_cheapest_current_purchase_offer_and_its_reserved_rates() -> None:
    prices = [
        point("l4", "purchase", 3000.0, 1),
        point("l4", "purchase", 2500.0, 5),  # newer observation of the same offer
        point("l4", "purchase", 2700.0, 2, instance="card (refurbished)"),
        point("l4", "reserved_1y", 0.61, 3, instance="g6.xlarge"),
        point("l4", "reserved_1y", 0.40, 3, instance="g6.2xlarge"),
        replace(point("l4", "reserved_1y", 0.45, 3, instance="g2-standard-4"), provider="gcp"),
        point("l4", "reserved_3y", 0.30, 3, instance="g6.xlarge"),
        point("l4", "reserved_3y", 0.30, 3, instance="g6.2xlarge"),
    ]
    table = price_coverage([GPUS["l4"], GPUS["t4"]], prices, {"t4": "no dated price found"})
    assert row(table, "l4") == [
        "`l4`",
        "$2,500 (2026-01-05)",
        "aws g6.2xlarge $0.40/GPU-h (cheapest of 2 offers, up to $0.61), "
        "gcp g2-standard-4 $0.45/GPU-h",
        "aws g6.2xlarge $0.30/GPU-h (2 offers at this price)",
    ]
    assert row(table, "t4")[1] == "none (below)"
    assert table.rstrip().splitlines()[-1] == "- `t4`: no dated price found."


def test_the_bundled_table_covers_every_gpu_and_explains_every_gap() -> None:
    table = bundled_price_coverage()
    gaps = purchase_gaps(bundled_text("purchase_gaps.csv"))
    assert gaps
    for gpu_id in GPUS:
        cells = row(table, gpu_id)
        assert (cells[1] == "none (below)") == (gpu_id in gaps), gpu_id
    for gpu_id, reason in gaps.items():
        assert f"- `{gpu_id}`: {reason}" in table


def test_the_seed_catalog_sentence_counts_what_the_migrations_store() -> None:
    """The README's counts are those of a freshly migrated catalog: every GPU, every distinct
    observation, split into prices.csv, the first SkyPilot snapshot and the newer Lambda and AWS
    files."""
    text = " ".join(seed_catalog_summary().split())
    snapshot = seeded_price_count(FIRST_SNAPSHOT) - hand_entered_count()
    lambda_v9 = seeded_price_count(FIRST_SNAPSHOT + V9_FILES) - seeded_price_count(FIRST_SNAPSHOT)
    aws_v9 = seeded_price_count() - seeded_price_count(FIRST_SNAPSHOT + V9_FILES)
    assert (
        f"holds {seeded_gpu_count()} GPUs and {seeded_price_count():,} price observations" in text
    )
    assert f"{hand_entered_count()} observations from dated, named" in text
    assert f"migration `0005`, {snapshot:,} more" in text
    assert f"(`0013`, {lambda_v9:,} more)" in text
    assert f"(`0015`, {aws_v9:,} more)" in text and aws_v9 > 0
    assert all(len(line) <= 100 for line in seed_catalog_summary().splitlines())
