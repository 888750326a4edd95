"""Catalog repository: GPU specs, append-only price history and the catalog revision.

Every write runs in one transaction that also bumps ``catalog_state.revision``; writers are
serialised on that row (``SELECT ... FOR UPDATE`` on Postgres, an in-process lock on the
embedded single-process SQLite), so revisions only grow and each write gets its own.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import and_, func, or_, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker
from sqlalchemy.orm import aliased

from service.domain.catalog import (
    CatalogSnapshot,
    CatalogSummary,
    GpuSpec,
    IngestResult,
    PricePage,
    PricePoint,
    PriceQuery,
    PutGpuResult,
    closest_names,
    normalize_name,
)
from service.domain.errors import Conflict, UnknownGpu
from service.domain.superseded import without_superseded
from service.store.cursor import decode_cursor, encode_cursor
from service.store.errors import outage_as_unavailable
from service.store.models import (
    CatalogStateRow,
    GpuRow,
    PriceGapRow,
    PriceImportRow,
    PricePointRow,
    UtcDateTime,
)
from service.store.rows import (
    gap_from_row,
    gpu_from_row,
    gpu_to_row_values,
    price_from_row,
    price_to_row_values,
)


@dataclass(frozen=True, slots=True)
class PriceImportRecord:
    """What ``import_prices`` records about the imported file."""

    format: str
    provider: str
    content_sha256: str
    observed_at: datetime
    rows: int
    source: str


_IDENTITY = ("gpu_id", "provider", "region", "kind", "instance_type", "observed_at")
_INSERT_CHUNK = 1000


class CatalogRepository:
    """Reads and writes the catalog. Returns domain values only; an unreachable database
    raises ``DatabaseUnavailable`` (``store/errors.py``)."""

    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine
        self._sessions = async_sessionmaker(engine, expire_on_commit=False)
        self._dialect = engine.dialect.name
        self._sqlite_write_lock = asyncio.Lock()

    @property
    def backend(self) -> str:
        return "postgresql" if self._dialect == "postgresql" else "sqlite"

    # ---- reads -------------------------------------------------------------------------

    @outage_as_unavailable
    async def ping(self) -> None:
        """Raise if the database does not answer a trivial query."""
        async with self._engine.connect() as connection:
            await connection.exec_driver_sql("SELECT 1")

    @outage_as_unavailable
    async def revision(self) -> int:
        async with self._sessions() as session:
            value = await session.scalar(
                select(CatalogStateRow.revision).where(CatalogStateRow.id == 1)
            )
        if value is None:
            raise RuntimeError("catalog_state row missing: run `gpuplan migrate`")
        return int(value)

    @outage_as_unavailable
    async def snapshot(self, as_of: datetime | None = None) -> CatalogSnapshot:
        """All GPUs, the latest observation of every offer at or before ``as_of`` and the
        documented price gaps, read in one consistent transaction together with the revision
        they belong to."""
        async with self._sessions() as session:
            if self._dialect == "postgresql":
                await session.connection(execution_options={"isolation_level": "REPEATABLE READ"})
            revision = await session.scalar(
                select(CatalogStateRow.revision).where(CatalogStateRow.id == 1)
            )
            gpu_rows = (await session.scalars(select(GpuRow).order_by(GpuRow.id))).all()
            prices = without_superseded(await self._latest_prices(session, as_of))
            gap_rows = (
                await session.scalars(select(PriceGapRow).order_by(PriceGapRow.gpu_id))
            ).all()
        return CatalogSnapshot(
            revision=int(revision or 0),
            gpus=tuple(gpu_from_row(r) for r in gpu_rows),
            prices=prices,
            prices_as_of=as_of,
            gaps=tuple(gap_from_row(r) for r in gap_rows),
        )

    async def _latest_prices(
        self, session: AsyncSession, as_of: datetime | None
    ) -> tuple[PricePoint, ...]:
        p = PricePointRow
        rank = (
            func.row_number()
            .over(
                partition_by=(p.gpu_id, p.provider, p.region, p.kind, p.instance_type),
                order_by=(p.observed_at.desc(), p.id.desc()),
            )
            .label("rank")
        )
        inner = select(p, rank)
        if as_of is not None:
            inner = inner.where(p.observed_at <= as_of)
        ranked = inner.subquery()
        latest = aliased(PricePointRow, ranked)
        rows = (
            await session.scalars(
                select(latest)
                .where(ranked.c.rank == 1)
                .order_by(
                    latest.gpu_id,
                    latest.provider,
                    latest.region,
                    latest.kind,
                    latest.instance_type,
                )
            )
        ).all()
        return tuple(price_from_row(r) for r in rows)

    @outage_as_unavailable
    async def price_history(self, gpu_id: str, query: PriceQuery) -> PricePage:
        """Observations of one GPU, newest first, filtered, one page at a time."""
        p = PricePointRow
        stmt = select(p).where(p.gpu_id == gpu_id)
        if query.provider is not None:
            stmt = stmt.where(p.provider == query.provider)
        if query.region is not None:
            stmt = stmt.where(p.region == query.region)
        if query.kind is not None:
            stmt = stmt.where(p.kind == query.kind)
        if query.since is not None:
            stmt = stmt.where(p.observed_at >= query.since)
        if query.until is not None:
            stmt = stmt.where(p.observed_at <= query.until)
        if query.cursor is not None:
            observed, row_id = decode_cursor(query.cursor)
            stmt = stmt.where(
                or_(p.observed_at < observed, and_(p.observed_at == observed, p.id < row_id))
            )
        stmt = stmt.order_by(p.observed_at.desc(), p.id.desc()).limit(query.limit + 1)
        async with self._sessions() as session:
            rows = (await session.scalars(stmt)).all()
        page = rows[: query.limit]
        next_cursor = (
            encode_cursor(page[-1].observed_at, page[-1].id) if len(rows) > query.limit else None
        )
        return PricePage(tuple(price_from_row(r) for r in page), next_cursor)

    @outage_as_unavailable
    async def summary(self) -> CatalogSummary:
        p = PricePointRow
        offers = (
            select(p.gpu_id, p.provider, p.region, p.kind, p.instance_type).distinct().subquery()
        )
        async with self._sessions() as session:
            state = (await session.scalars(select(CatalogStateRow))).one()
            gpus = await session.scalar(select(func.count()).select_from(GpuRow))
            points, newest_observed, newest_ingested = (
                await session.execute(
                    select(func.count(), func.max(p.observed_at), func.max(p.ingested_at))
                )
            ).one()
            offer_count = await session.scalar(select(func.count()).select_from(offers))
            providers = await session.scalar(select(func.count(func.distinct(p.provider))))
        to_utc = UtcDateTime().process_result_value  # max() loses the column type on SQLite
        return CatalogSummary(
            revision=int(state.revision),
            updated_at=state.updated_at,
            gpus=int(gpus or 0),
            price_points=int(points or 0),
            offers=int(offer_count or 0),
            providers=int(providers or 0),
            newest_observed_at=to_utc(_as_datetime(newest_observed), self._engine.dialect),
            newest_ingested_at=to_utc(_as_datetime(newest_ingested), self._engine.dialect),
        )

    # ---- writes ------------------------------------------------------------------------

    @outage_as_unavailable
    async def put_gpu(self, gpu: GpuSpec, now: datetime) -> PutGpuResult:
        """Create or replace one GPU's spec and bump the revision (one transaction)."""
        async with self._write() as session:
            others = (await session.scalars(select(GpuRow).where(GpuRow.id != gpu.id))).all()
            taken: dict[str, str] = {}
            for row in others:
                taken[normalize_name(row.id)] = row.id
                for alias in row.aliases or ():
                    taken[normalize_name(alias)] = row.id
            for index, alias in enumerate(gpu.aliases):
                owner = taken.get(normalize_name(alias))
                if owner is not None:
                    raise Conflict(
                        f"alias {alias!r} already names GPU {owner!r}", field=f"aliases[{index}]"
                    )
            revision = await self._bump(session, now)
            existing = await session.get(GpuRow, gpu.id)
            values = gpu_to_row_values(gpu, revision=revision, updated_at=now)
            if existing is None:
                session.add(GpuRow(**values))
            else:
                for key, value in values.items():
                    setattr(existing, key, value)
            await session.commit()
        return PutGpuResult(created=existing is None, revision=revision)

    @outage_as_unavailable
    async def ingest_prices(
        self,
        points: Sequence[PricePoint],
        now: datetime,
        progress: Callable[[int, int], None] | None = None,
    ) -> IngestResult:
        """Append observations, all or nothing, idempotent on the observation identity.

        Rows whose identity is already stored count as ``already_present`` (the stored value
        wins; a correction is a new observation with its own ``observed_at``). The revision is
        bumped only when at least one row was inserted.
        """
        async with self._write() as session:
            result = await self._append(session, points, now, progress)
            await session.commit()
        return result

    @outage_as_unavailable
    async def imported_observed_at(
        self, fmt: str, provider: str, content_sha256: str
    ) -> datetime | None:
        """The ``observed_at`` the earliest import of this file (same format, provider and
        content hash) gave its rows, or ``None`` when it was never imported."""
        i = PriceImportRow
        async with self._sessions() as session:
            value = await session.scalar(
                select(func.min(i.observed_at)).where(
                    i.format == fmt, i.provider == provider, i.content_sha256 == content_sha256
                )
            )
        return UtcDateTime().process_result_value(_as_datetime(value), self._engine.dialect)

    @outage_as_unavailable
    async def import_prices(
        self,
        points: Sequence[PricePoint],
        record: PriceImportRecord,
        now: datetime,
        progress: Callable[[int, int], None] | None = None,
    ) -> IngestResult:
        """``ingest_prices`` for a whole imported file, recording the import (its content hash
        and ``observed_at``) in the same transaction, unless the same file with the same date is
        already recorded."""
        async with self._write() as session:
            result = await self._append(session, points, now, progress)
            i = PriceImportRow
            known = await session.scalar(
                select(func.count()).where(
                    i.format == record.format,
                    i.provider == record.provider,
                    i.content_sha256 == record.content_sha256,
                    i.observed_at == record.observed_at,
                )
            )
            if not known:
                session.add(
                    PriceImportRow(
                        format=record.format,
                        provider=record.provider,
                        content_sha256=record.content_sha256,
                        observed_at=record.observed_at,
                        imported_at=now,
                        rows=record.rows,
                        observations=len(points),
                        inserted=result.inserted,
                        revision=result.revision,
                        source=record.source,
                    )
                )
            await session.commit()
        return result

    async def _append(
        self,
        session: AsyncSession,
        points: Sequence[PricePoint],
        now: datetime,
        progress: Callable[[int, int], None] | None,
    ) -> IngestResult:
        """Insert the new observations of ``points`` and bump the revision when any was new
        (the caller commits)."""
        wanted = sorted({p.gpu_id for p in points})
        known = set((await session.scalars(select(GpuRow.id).where(GpuRow.id.in_(wanted)))).all())
        for index, point in enumerate(points):
            if point.gpu_id not in known:
                all_ids = list((await session.scalars(select(GpuRow.id))).all())
                raise UnknownGpu(
                    point.gpu_id,
                    closest_names(point.gpu_id, all_ids),
                    field=f"observations[{index}].gpu",
                )
        current = await self._lock_revision(session)
        revision = current + 1
        inserted = 0
        insert = pg_insert if self._dialect == "postgresql" else sqlite_insert
        for start in range(0, len(points), _INSERT_CHUNK):
            chunk = points[start : start + _INSERT_CHUNK]
            stmt = (
                insert(PricePointRow)
                .values([price_to_row_values(p, revision=revision, ingested_at=now) for p in chunk])
                .on_conflict_do_nothing(index_elements=list(_IDENTITY))
                .returning(PricePointRow.id)
            )
            inserted += len((await session.execute(stmt)).all())
            if progress is not None:
                progress(start + len(chunk), len(points))
        if inserted:
            await session.execute(
                update(CatalogStateRow)
                .where(CatalogStateRow.id == 1)
                .values(revision=revision, updated_at=now)
            )
        else:
            revision = current
        return IngestResult(inserted, len(points) - inserted, revision)

    # ---- helpers -----------------------------------------------------------------------

    def _write(self) -> _WriteTransaction:
        return _WriteTransaction(self)

    async def _lock_revision(self, session: AsyncSession) -> int:
        stmt = select(CatalogStateRow.revision).where(CatalogStateRow.id == 1)
        if self._dialect == "postgresql":
            stmt = stmt.with_for_update()
        value = await session.scalar(stmt)
        if value is None:
            raise RuntimeError("catalog_state row missing: run `gpuplan migrate`")
        return int(value)

    async def _bump(self, session: AsyncSession, now: datetime) -> int:
        revision = await self._lock_revision(session) + 1
        await session.execute(
            update(CatalogStateRow)
            .where(CatalogStateRow.id == 1)
            .values(revision=revision, updated_at=now)
        )
        return revision


class _WriteTransaction:
    """A session for one write; on SQLite also holds the process-wide write lock."""

    def __init__(self, repo: CatalogRepository) -> None:
        self._repo = repo
        self._session: AsyncSession | None = None
        self._locked = False

    async def __aenter__(self) -> AsyncSession:
        if self._repo._dialect == "sqlite":
            await self._repo._sqlite_write_lock.acquire()
            self._locked = True
        self._session = self._repo._sessions()
        return self._session

    async def __aexit__(self, *exc: object) -> None:
        try:
            if self._session is not None:
                await self._session.close()  # rolls back anything not committed
        finally:
            if self._locked:
                self._repo._sqlite_write_lock.release()


def _as_datetime(value: object) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value
    if isinstance(value, str):
        return datetime.fromisoformat(value)
    raise TypeError(f"unexpected timestamp {value!r}")
