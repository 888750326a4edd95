"""Catalog import/export for the command line (same rules as the HTTP endpoints)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import replace
from datetime import UTC, datetime

from service.domain.catalog import IngestResult, PricePoint, PriceQuery, normalize_name
from service.domain.errors import InvalidInput
from service.settings import Settings
from service.store.csv_format import parse_prices_csv, write_prices_csv
from service.store.database import create_engine
from service.store.migrate import upgrade
from service.store.repositories import CatalogRepository

EXPORT_PAGE = 1000
MAX_IMPORT_ROWS = 1_000_000  # one transaction; larger files are split by the operator


@asynccontextmanager
async def open_repository(settings: Settings) -> AsyncIterator[CatalogRepository]:
    """A repository on the configured database (an embedded SQLite file is migrated first)."""
    engine = create_engine(settings.database_url, timeout_s=settings.database_timeout_s)
    try:
        if settings.database_backend == "sqlite":
            await upgrade(engine)
        yield CatalogRepository(engine)
    finally:
        await engine.dispose()


async def import_prices(
    settings: Settings,
    text: str,
    *,
    progress: Callable[[int, int], None] | None = None,
) -> IngestResult:
    """Parse, resolve aliases, and ingest the whole file in one all-or-nothing transaction."""
    points = parse_prices_csv(text)
    if not points:
        raise InvalidInput("the file holds no observations", field="csv")
    if len(points) > MAX_IMPORT_ROWS:
        raise InvalidInput(f"{len(points)} rows; split files above {MAX_IMPORT_ROWS}", field="csv")
    async with open_repository(settings) as repo:
        snapshot = await repo.snapshot()
        index = snapshot.alias_index
        resolved = [
            replace(p, gpu_id=index.get(normalize_name(p.gpu_id), p.gpu_id)) for p in points
        ]
        return await repo.ingest_prices(resolved, datetime.now(UTC), progress)


async def export_prices(settings: Settings, gpu: str | None = None) -> str:
    """The whole price history (or one GPU's) in the import format, oldest GPU id first."""
    async with open_repository(settings) as repo:
        snapshot = await repo.snapshot()
        gpu_ids = (
            [snapshot.resolve_gpu(gpu, field_name="gpu").id]
            if gpu
            else [g.id for g in snapshot.gpus]
        )
        points: list[PricePoint] = []
        for gpu_id in gpu_ids:
            cursor: str | None = None
            while True:
                page = await repo.price_history(
                    gpu_id, PriceQuery(limit=EXPORT_PAGE, cursor=cursor)
                )
                points.extend(page.items)
                cursor = page.next_cursor
                if cursor is None:
                    break
    return write_prices_csv(points)
