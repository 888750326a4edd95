"""Helpers for migrations that add a ``GpuSpec`` field (the steps are in CONTRIBUTING.md).

A migration adds the column with ``op.add_column`` (the type spelt out, as Alembic writes it),
then calls ``fill_gpu_column`` to give the bundled GPUs their ``service/data/gpus.csv`` values.
"""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

from service.store.csv_format import bundled_text, parse_gpus_csv
from service.store.models import GpuRow
from service.store.rows import gpu_to_row_values


def fill_gpu_column(name: str) -> None:
    """Set column ``name`` of every bundled GPU to its value in ``gpus.csv``, as one catalog
    write: the catalog revision moves on (so cached plans are re-keyed) and the updated rows
    carry it. GPUs created through the API keep the column's default (or NULL)."""
    now = datetime.now(UTC)
    gpus = sa.table(
        "gpus",
        sa.column("id", sa.String()),
        sa.column(name, GpuRow.__table__.c[name].type),
        sa.column("revision", sa.BigInteger()),
        sa.column("updated_at", GpuRow.__table__.c["updated_at"].type),
    )
    state = sa.table(
        "catalog_state",
        sa.column("id", sa.Integer()),
        sa.column("revision", sa.BigInteger()),
        sa.column("updated_at", GpuRow.__table__.c["updated_at"].type),
    )
    bind = op.get_bind()
    revision = bind.scalar(sa.select(state.c.revision).where(state.c.id == 1))
    revision = int(revision or 0) + 1
    bind.execute(state.update().where(state.c.id == 1).values(revision=revision, updated_at=now))
    for gpu in parse_gpus_csv(bundled_text("gpus.csv")):
        value = gpu_to_row_values(gpu, revision=revision, updated_at=now)[name]
        bind.execute(
            gpus.update()
            .where(gpus.c.id == gpu.id)
            .values({name: value, "revision": revision, "updated_at": now})
        )
