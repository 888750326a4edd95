"""Import a cloud provider's price catalog file (``gpuplan catalog import --format skypilot``,
``POST /v1/prices/import``).

The file is parsed against the catalog's GPUs (``store/skypilot_format.py``), then written in
one all-or-nothing transaction together with a record of the import (its content hash and
``observed_at``). Idempotent: without an explicit ``observed_at``, a file already imported
(same format, provider and content) reuses the date it was first given, so its rows are all
``already_present``; with a new ``observed_at`` the same prices are appended as new history.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import TypeVar

from service.domain.catalog import SOURCE_MAX_LENGTH
from service.domain.errors import InvalidInput
from service.domain.price_import import IMPORT_FORMATS, SKYPILOT_CLOUDS, PriceImportResult
from service.store.repositories import CatalogRepository, PriceImportRecord
from service.store.skypilot_format import parse_skypilot_csv
from service.store.skypilot_seed import content_sha256
from service.usecases.catalog_state import CatalogState

T = TypeVar("T")

FUTURE_SLACK = timedelta(days=1)
"""How far past "now" an explicit ``observed_at`` may be (clock skew, time zones)."""
SOURCE_LABEL_MAX = 200
IMPORT_TIMEOUT_S = 60.0

CLOUDS = SKYPILOT_CLOUDS


def check_format(fmt: str) -> str:
    if fmt not in IMPORT_FORMATS:
        raise InvalidInput(
            f"unknown format {fmt!r}; expected one of {', '.join(IMPORT_FORMATS)}", field="format"
        )
    return fmt


def default_source(fmt: str, cloud: str, digest: str) -> str:
    return f"{fmt} {cloud} vms.csv sha256:{digest[:16]}"


async def import_price_catalog(
    repo: CatalogRepository,
    text: str,
    *,
    fmt: str,
    cloud: str,
    observed_at: datetime | None,
    source: str | None,
    now: datetime,
    progress: Callable[[int, int], None] | None = None,
) -> PriceImportResult:
    """Parse ``text`` (one ``cloud``'s catalog file) and append its offers; see the module
    docstring for the dates. A bad file raises ``InvalidInput`` naming the problem and writes
    nothing."""
    check_format(fmt)
    if cloud not in CLOUDS:
        raise InvalidInput(
            f"unknown cloud {cloud!r}; expected one of {', '.join(CLOUDS)}", field="cloud"
        )
    if source is not None and len(source) > SOURCE_LABEL_MAX:
        raise InvalidInput(f"source: at most {SOURCE_LABEL_MAX} characters", field="source")
    digest = content_sha256(text)
    repeated = False
    if observed_at is None:
        earlier = await repo.imported_observed_at(fmt, cloud, digest)
        if earlier is not None:
            observed_at, repeated = earlier, True
        else:
            observed_at = now.replace(microsecond=0)
    elif observed_at.tzinfo is None:
        raise InvalidInput(
            "observed_at needs a zone, e.g. 2026-06-01T00:00:00Z", field="observed_at"
        )
    elif observed_at > now + FUTURE_SLACK:
        raise InvalidInput(
            f"observed_at {observed_at.isoformat()} is in the future", field="observed_at"
        )
    label = source or default_source(fmt, cloud, digest)
    if len(label) + 200 > SOURCE_MAX_LENGTH:  # room for the per-offer details
        raise InvalidInput("source label too long", field="source")
    snapshot = await repo.snapshot()
    parsed = await asyncio.to_thread(
        parse_skypilot_csv, text, cloud, snapshot.gpu_by_id, observed_at=observed_at, source=label
    )
    record = PriceImportRecord(fmt, cloud, digest, observed_at, parsed.rows, label)
    written = await repo.import_prices(parsed.points, record, now, progress)
    return PriceImportResult(
        parsed=parsed,
        content_sha256=digest,
        observed_at=observed_at,
        repeated=repeated,
        inserted=written.inserted,
        already_present=written.already_present,
        revision=written.revision,
    )


class PriceImportService:
    """The HTTP side of the import: database calls under the timeout and the circuit breaker
    of the catalog state, and the snapshot advanced after a write."""

    def __init__(
        self,
        repo: CatalogRepository,
        state: CatalogState,
        clock: Callable[[], datetime],
        *,
        timeout_s: float = 2.0,
    ) -> None:
        self._repo = repo
        self._state = state
        self._clock = clock
        self._timeout = max(timeout_s, IMPORT_TIMEOUT_S)

    async def import_catalog(
        self,
        text: str,
        *,
        fmt: str,
        cloud: str,
        observed_at: datetime | None,
        source: str | None,
    ) -> PriceImportResult:
        result = await self._db(
            lambda: import_price_catalog(
                self._repo,
                text,
                fmt=fmt,
                cloud=cloud,
                observed_at=observed_at,
                source=source,
                now=self._clock(),
            ),
            "importing a price catalog",
        )
        self._state.advance(result.revision)
        return result

    async def _db(self, call: Callable[[], Awaitable[T]], what: str) -> T:
        return await self._state.call_database(call, self._timeout, what)
