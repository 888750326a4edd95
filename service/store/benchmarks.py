"""Benchmark repository: imported result files and their measurements (append-only).

A file is stored with all its measurements in one transaction or not at all; the unique
content hash makes a second import of the same bytes a no-op that returns the first record.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from datetime import datetime
from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker

from service.domain.benchmarks import (
    BenchmarkFormat,
    BenchmarkImport,
    Measurement,
    ParsedFile,
    RunContext,
)
from service.store.errors import outage_as_unavailable
from service.store.models import BenchmarkImportRow, BenchmarkMeasurementRow

_MEASUREMENT_FIELDS = tuple(
    name
    for name in Measurement.__dataclass_fields__  # every stored field of the domain value
)


class BenchmarkRepository:
    def __init__(self, engine: AsyncEngine) -> None:
        self._sessions = async_sessionmaker(engine, expire_on_commit=False)

    @outage_as_unavailable
    async def find(self, content_sha256: str) -> BenchmarkImport | None:
        async with self._sessions() as session:
            row = await session.scalar(
                select(BenchmarkImportRow).where(
                    BenchmarkImportRow.content_sha256 == content_sha256
                )
            )
        return None if row is None else _import_from_row(row)

    @outage_as_unavailable
    async def add(
        self,
        content_sha256: str,
        parsed: ParsedFile,
        *,
        filename: str | None,
        labels: tuple[str, ...],
        key_id: str,
        context: RunContext,
        now: datetime,
    ) -> tuple[BenchmarkImport, bool]:
        """Store the file and its measurements; ``(record, True)`` when it was new, the
        earlier record and ``False`` when the same content was already imported."""
        try:
            async with self._sessions() as session, session.begin():
                row = BenchmarkImportRow(
                    content_sha256=content_sha256,
                    format=parsed.format,
                    filename=filename,
                    labels=list(labels),
                    key_id=key_id,
                    imported_at=now,
                    runs=parsed.runs,
                    measurements=len(parsed.measurements),
                    context={k: v for k, v in asdict(context).items() if v is not None},
                )
                session.add(row)
                await session.flush()
                values = [
                    {"import_id": row.id, **{f: getattr(m, f) for f in _MEASUREMENT_FIELDS}}
                    for m in parsed.measurements
                ]
                if values:
                    await session.execute(insert(BenchmarkMeasurementRow), values)
            return _import_from_row(row), True
        except IntegrityError:
            earlier = await self.find(content_sha256)
            if earlier is None:
                raise
            return earlier, False

    @outage_as_unavailable
    async def imports(self) -> list[BenchmarkImport]:
        async with self._sessions() as session:
            rows = (
                await session.scalars(select(BenchmarkImportRow).order_by(BenchmarkImportRow.id))
            ).all()
        return [_import_from_row(r) for r in rows]

    @outage_as_unavailable
    async def measurements(
        self,
        *,
        engine: str,
        labels: Sequence[str] = (),
        gpus: Sequence[str] = (),
        models: Sequence[str] = (),
    ) -> list[tuple[str, Measurement]]:
        """``(file content hash, measurement)`` of every stored measurement of ``engine`` whose
        file carries all ``labels`` and whose GPU and model are among ``gpus``/``models``
        (empty: any), in import order."""
        query = (
            select(BenchmarkImportRow.content_sha256, BenchmarkImportRow.labels,
                   BenchmarkMeasurementRow)
            .join(BenchmarkImportRow, BenchmarkImportRow.id == BenchmarkMeasurementRow.import_id)
            .where(BenchmarkMeasurementRow.engine == engine)
            .order_by(BenchmarkMeasurementRow.id)
        )  # fmt: skip
        if gpus:
            query = query.where(BenchmarkMeasurementRow.gpu.in_(list(gpus)))
        if models:
            query = query.where(BenchmarkMeasurementRow.model.in_(list(models)))
        async with self._sessions() as session:
            result = (await session.execute(query)).all()
        wanted = set(labels)
        return [
            (digest, _measurement_from_row(row))
            for digest, file_labels, row in result
            if wanted <= set(file_labels)
        ]


def _import_from_row(row: BenchmarkImportRow) -> BenchmarkImport:
    fmt: BenchmarkFormat = row.format  # type: ignore[assignment]
    context: dict[str, Any] = dict(row.context)
    return BenchmarkImport(
        id=row.id,
        content_sha256=row.content_sha256,
        format=fmt,
        filename=row.filename,
        labels=tuple(row.labels),
        key_id=row.key_id,
        imported_at=row.imported_at,
        runs=row.runs,
        measurements=row.measurements,
        context=RunContext(**context),
    )


def _measurement_from_row(row: BenchmarkMeasurementRow) -> Measurement:
    values: dict[str, Any] = {f: getattr(row, f) for f in _MEASUREMENT_FIELDS}
    return Measurement(**values)
