"""Seed the bundled SkyPilot snapshot (service/data/skypilot/): thousands of real offers.

One catalog write: the revision moves on; the GPUs of ``gpus.csv`` the database lacks (added
for this snapshot: A40, RTX 3090 ...) are inserted, then every offer of the five files, each
file recorded in ``price_imports`` so importing it again (``gpuplan catalog import --format
skypilot``) inserts nothing. Observations already stored (the Azure rows of ``prices.csv`` come
from the same file and date) are left as they are: history is append-only.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01
"""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

from service.store.csv_format import bundled_text, parse_gpus_csv
from service.store.migrations.backfill import next_catalog_revision, seed_bundled_imports
from service.store.models import GpuRow
from service.store.rows import gpu_to_row_values
from service.store.skypilot_seed import FIRST_SNAPSHOT, bundled_imports

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

_CHUNK = 500


def upgrade() -> None:
    bind = op.get_bind()
    now = datetime.now(UTC)
    new_revision = next_catalog_revision(bind, now)
    gpus = {g.id: g for g in parse_gpus_csv(bundled_text("gpus.csv"))}
    present_ids = set(bind.scalars(sa.select(GpuRow.id)).all())
    columns = {c["name"] for c in sa.inspect(bind).get_columns("gpus")}
    missing = [
        {
            k: v
            for k, v in gpu_to_row_values(g, revision=new_revision, updated_at=now).items()
            if k in columns
        }
        for gid, g in gpus.items()
        if gid not in present_ids
    ]
    if missing:
        op.bulk_insert(GpuRow.__table__, missing)
    seed_bundled_imports(
        bind, bundled_imports(gpus, FIRST_SNAPSHOT), revision=new_revision, now=now, chunk=_CHUNK
    )


def downgrade() -> None:
    raise RuntimeError("seeded prices are append-only history; restore from a backup instead")
