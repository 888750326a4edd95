"""Catalog import/export for the command line (same rules as the HTTP endpoints).

The caller opens the repository (``cli_common.open_repository``) and passes it in, with "now".
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from service.domain.catalog import PRICE_PAGE_MAX, IngestResult, PricePoint, PriceQuery
from service.domain.errors import InvalidInput
from service.store.csv_format import parse_prices_csv, write_prices_csv
from service.store.repositories import CatalogRepository

MAX_IMPORT_ROWS = 1_000_000  # one transaction; larger files are split by the operator


async def import_prices(
    repo: CatalogRepository,
    text: str,
    now: datetime,
    *,
    progress: Callable[[int, int], None] | None = None,
) -> IngestResult:
    """Parse, resolve aliases, and ingest the whole file in one all-or-nothing transaction."""
    points = parse_prices_csv(text)
    if not points:
        raise InvalidInput("the file holds no observations", field="csv")
    if len(points) > MAX_IMPORT_ROWS:
        raise InvalidInput(f"{len(points)} rows; split files above {MAX_IMPORT_ROWS}", field="csv")
    snapshot = await repo.snapshot()
    return await repo.ingest_prices(snapshot.with_gpu_ids(points), now, progress)


async def export_prices(repo: CatalogRepository, gpu: str | None = None) -> str:
    """The whole price history (or one GPU's) in the import format, oldest GPU id first."""
    snapshot = await repo.snapshot()
    gpu_ids = (
        [snapshot.resolve_gpu(gpu, field_name="gpu").id] if gpu else [g.id for g in snapshot.gpus]
    )
    points: list[PricePoint] = []
    for gpu_id in gpu_ids:
        cursor: str | None = None
        while True:
            page = await repo.price_history(gpu_id, PriceQuery(limit=PRICE_PAGE_MAX, cursor=cursor))
            points.extend(page.items)
            cursor = page.next_cursor
            if cursor is None:
                break
    return write_prices_csv(points)
