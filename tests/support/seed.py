"""What a freshly migrated catalog holds, computed from the bundled files (not hard-coded, so a
new seed row or catalog snapshot changes the expectation with it)."""

from __future__ import annotations

from datetime import datetime
from functools import cache

from service.domain.catalog import PricePoint
from service.store.csv_format import bundled_text, parse_gpus_csv, parse_prices_csv
from service.store.skypilot_seed import BUNDLED_FILES, SeedFile, bundled_imports


def _identity(p: PricePoint) -> tuple[object, ...]:
    return (p.gpu_id, p.provider, p.region, p.kind, p.instance_type, p.observed_at)


@cache
def seeded_gpu_count() -> int:
    return len(parse_gpus_csv(bundled_text("gpus.csv")))


@cache
def hand_entered_count() -> int:
    """Rows of ``service/data/prices.csv`` (migration 0002)."""
    return len(parse_prices_csv(bundled_text("prices.csv")))


@cache
def seeded_price_count(files: tuple[SeedFile, ...] = BUNDLED_FILES) -> int:
    """Observations after the seeding migrations: ``prices.csv`` plus the bundled SkyPilot
    ``files`` (all by default; ``FIRST_SNAPSHOT`` before 0013), each identity once (the
    snapshot's Azure file repeats some ``prices.csv`` rows)."""
    gpus = {g.id: g for g in parse_gpus_csv(bundled_text("gpus.csv"))}
    keys = {_identity(p) for p in parse_prices_csv(bundled_text("prices.csv"))}
    for item in bundled_imports(gpus, files):
        keys |= {_identity(p) for p in item.parsed.points}
    return len(keys)


@cache
def newest_seeded_observation() -> datetime:
    """The newest ``observed_at`` of a freshly migrated catalog (``prices.csv`` and every
    bundled SkyPilot file)."""
    gpus = {g.id: g for g in parse_gpus_csv(bundled_text("gpus.csv"))}
    newest = max(p.observed_at for p in parse_prices_csv(bundled_text("prices.csv")))
    for item in bundled_imports(gpus, BUNDLED_FILES):
        newest = max([newest, *(p.observed_at for p in item.parsed.points)])
    return newest
