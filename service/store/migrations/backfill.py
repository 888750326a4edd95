"""Helpers for migrations that write the catalog.

A migration that adds a ``GpuSpec`` field (the steps are in CONTRIBUTING.md) adds the column
with ``op.add_column`` (the type spelt out, as Alembic writes it), then calls
``fill_gpu_column`` (with one or several columns) to give the bundled GPUs their
``service/data/gpus.csv`` values. A migration that seeds prices moves the revision on with
``next_catalog_revision`` and appends its rows with ``insert_new_prices``; one that brings a
database up to the bundled ``prices.csv`` calls ``append_bundled_prices``, which writes (and
moves the revision) only when the database lacks a row. ``store_bundled_gaps`` does the same
for the documented reasons of ``purchase_gaps.csv``, and ``drop_priced_gaps`` deletes the
reasons of GPUs a newer seed row prices.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from service.store.csv_format import (
    bundled_text,
    parse_gpus_csv,
    parse_prices_csv,
    parse_purchase_gaps_csv,
)
from service.store.models import GpuRow, PriceGapRow, PriceImportRow, PricePointRow
from service.store.rows import gap_to_row_values, gpu_to_row_values, price_to_row_values
from service.store.skypilot_seed import BundledImport, SeedFile, bundled_imports

# What makes a price observation the same one: a seed never stores it twice.
_PRICE_IDENTITY = ["gpu_id", "provider", "region", "kind", "instance_type", "observed_at"]

_STATE = sa.table(
    "catalog_state",
    sa.column("id", sa.Integer()),
    sa.column("revision", sa.BigInteger()),
    sa.column("updated_at", GpuRow.__table__.c["updated_at"].type),
)


def _current_revision(bind: sa.Connection) -> int:
    return int(bind.scalar(sa.select(_STATE.c.revision).where(_STATE.c.id == 1)) or 0)


def _set_revision(bind: sa.Connection, revision: int, now: datetime) -> None:
    bind.execute(_STATE.update().where(_STATE.c.id == 1).values(revision=revision, updated_at=now))


def next_catalog_revision(bind: sa.Connection, now: datetime) -> int:
    """Move the catalog revision on by one (one catalog write: cached plans are re-keyed) and
    return the new revision, which the rows this write stores carry."""
    revision = _current_revision(bind) + 1
    _set_revision(bind, revision, now)
    return revision


def append_bundled_prices(
    bind: sa.Connection, now: datetime, chunk: int, text: str | None = None
) -> int:
    """Append the observations of the bundled ``prices.csv`` (or of ``text`` in its format)
    that the database lacks, as one catalog write carrying the next revision; the number
    appended. When every row is stored already (a database seeded from this very file by
    0002) nothing is written and the revision stays: no plan is re-keyed for nothing."""
    revision = _current_revision(bind) + 1
    points = parse_prices_csv(text if text is not None else bundled_text("prices.csv"))
    values = [price_to_row_values(p, revision=revision, ingested_at=now) for p in points]
    inserted = insert_new_prices(bind, values, chunk)
    if inserted:
        _set_revision(bind, revision, now)
    return inserted


def seed_newer_bundled_files(
    bind: sa.Connection, files: tuple[SeedFile, ...], now: datetime
) -> None:
    """Append the bundled SkyPilot ``files`` (newer snapshots of offers already seeded) as one
    catalog write carrying the next revision, each recorded as an import
    (:func:`seed_bundled_imports`)."""
    gpus = {g.id: g for g in parse_gpus_csv(bundled_text("gpus.csv"))}
    seed_bundled_imports(
        bind,
        bundled_imports(gpus, files),
        revision=next_catalog_revision(bind, now),
        now=now,
        chunk=500,
    )


def seed_bundled_imports(
    bind: sa.Connection,
    items: Sequence[BundledImport],
    *,
    revision: int,
    now: datetime,
    chunk: int,
) -> None:
    """Append every offer of the bundled SkyPilot ``items`` (observations already stored are
    skipped) with ``revision``, and record each file in ``price_imports`` as an import would,
    so importing it again inserts nothing."""
    for item in items:
        values = [
            price_to_row_values(p, revision=revision, ingested_at=now) for p in item.parsed.points
        ]
        inserted = insert_new_prices(bind, values, chunk)
        bind.execute(
            sa.insert(PriceImportRow).values(
                format="skypilot",
                provider=item.file.cloud,
                content_sha256=item.content_sha256,
                observed_at=item.file.observed_at,
                imported_at=now,
                rows=item.parsed.rows,
                observations=len(values),
                inserted=inserted,
                revision=revision,
                source=item.file.source,
            )
        )


def insert_new_prices(bind: sa.Connection, values: list[dict[str, object]], chunk: int) -> int:
    """Append price rows in chunks, skipping observations already stored (history is
    append-only); the number inserted."""
    insert = pg_insert if bind.dialect.name == "postgresql" else sqlite_insert
    inserted = 0
    for start in range(0, len(values), chunk):
        stmt = (
            insert(PricePointRow)
            .values(values[start : start + chunk])
            .on_conflict_do_nothing(index_elements=_PRICE_IDENTITY)
            .returning(PricePointRow.id)
        )
        inserted += len(bind.execute(stmt).all())
    return inserted


def store_bundled_gaps(bind: sa.Connection, now: datetime, text: str | None = None) -> int:
    """Store the reasons of the bundled ``purchase_gaps.csv`` (or of ``text`` in its format)
    that the database lacks, for the GPUs it holds, as one catalog write carrying the next
    revision (plans that name those GPUs now say why, so they are re-keyed); the number
    stored. When every reason is stored already nothing is written and the revision stays."""
    held = set(bind.scalars(sa.select(GpuRow.__table__.c["id"])))
    stored = {
        (row.gpu_id, row.kind)
        for row in bind.execute(sa.select(PriceGapRow.gpu_id, PriceGapRow.kind))
    }
    gaps = [
        gap
        for gap in parse_purchase_gaps_csv(
            text if text is not None else bundled_text("purchase_gaps.csv")
        )
        if gap.gpu_id in held and (gap.gpu_id, gap.kind) not in stored
    ]
    if not gaps:
        return 0
    revision = next_catalog_revision(bind, now)
    bind.execute(
        sa.insert(PriceGapRow), [gap_to_row_values(gap, revision=revision) for gap in gaps]
    )
    return len(gaps)


def drop_priced_gaps(bind: sa.Connection) -> int:
    """Delete the stored reasons for a missing purchase price of the GPUs that now have one
    (a later seed row closed the gap: the reason would contradict the price); the number
    deleted. The caller makes it part of a catalog write (``next_catalog_revision``) when it
    deletes any."""
    priced = sa.select(PricePointRow.gpu_id).where(PricePointRow.kind == "purchase")
    gone = bind.execute(
        sa.delete(PriceGapRow)
        .where(PriceGapRow.kind == "purchase", PriceGapRow.gpu_id.in_(priced))
        .returning(PriceGapRow.gpu_id)
    )
    return len(gone.all())


def fill_gpu_column(*names: str) -> None:
    """Set columns ``names`` of every bundled GPU to their values in ``gpus.csv``, as one
    catalog write: the catalog revision moves on (so cached plans are re-keyed) and the updated
    rows carry it. GPUs created through the API keep the columns' defaults (or NULL)."""
    now = datetime.now(UTC)
    gpus = sa.table(
        "gpus",
        sa.column("id", sa.String()),
        *(sa.column(name, GpuRow.__table__.c[name].type) for name in names),
        sa.column("revision", sa.BigInteger()),
        sa.column("updated_at", GpuRow.__table__.c["updated_at"].type),
    )
    bind = op.get_bind()
    revision = next_catalog_revision(bind, now)
    for gpu in parse_gpus_csv(bundled_text("gpus.csv")):
        row = gpu_to_row_values(gpu, revision=revision, updated_at=now)
        bind.execute(
            gpus.update()
            .where(gpus.c.id == gpu.id)
            .values(
                {**{name: row[name] for name in names}, "revision": revision, "updated_at": now}
            )
        )
