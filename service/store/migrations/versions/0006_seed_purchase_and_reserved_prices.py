"""Seed the purchase and reserved prices added to service/data/prices.csv after revision 1.

Databases seeded before these rows existed get them here, as one catalog write (the revision
moves on, so cached plans are re-keyed); rows already stored (a database seeded from the
current ``prices.csv`` by 0002) are left as they are: history is append-only.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-02
"""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from service.store.csv_format import bundled_text, parse_prices_csv
from service.store.models import CatalogStateRow, PricePointRow
from service.store.rows import price_to_row_values

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

_IDENTITY = ["gpu_id", "provider", "region", "kind", "instance_type", "observed_at"]
_CHUNK = 50


def upgrade() -> None:
    bind = op.get_bind()
    now = datetime.now(UTC)
    current = bind.scalar(sa.select(CatalogStateRow.revision).where(CatalogStateRow.id == 1))
    new_revision = int(current or 0) + 1
    bind.execute(
        sa.update(CatalogStateRow)
        .where(CatalogStateRow.id == 1)
        .values(revision=new_revision, updated_at=now)
    )
    values = [
        price_to_row_values(p, revision=new_revision, ingested_at=now)
        for p in parse_prices_csv(bundled_text("prices.csv"), ingested_at=now)
    ]
    insert = pg_insert if bind.dialect.name == "postgresql" else sqlite_insert
    for start in range(0, len(values), _CHUNK):
        bind.execute(
            insert(PricePointRow)
            .values(values[start : start + _CHUNK])
            .on_conflict_do_nothing(index_elements=_IDENTITY)
        )


def downgrade() -> None:
    raise RuntimeError("seeded prices are append-only history; restore from a backup instead")
