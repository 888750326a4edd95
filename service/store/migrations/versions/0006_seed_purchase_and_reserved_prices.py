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

from alembic import op

from service.store.csv_format import bundled_text, parse_prices_csv
from service.store.migrations.backfill import insert_new_prices, next_catalog_revision
from service.store.rows import price_to_row_values

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    bind = op.get_bind()
    now = datetime.now(UTC)
    new_revision = next_catalog_revision(bind, now)
    values = [
        price_to_row_values(p, revision=new_revision, ingested_at=now)
        for p in parse_prices_csv(bundled_text("prices.csv"), ingested_at=now)
    ]
    insert_new_prices(bind, values, chunk=50)


def downgrade() -> None:
    raise RuntimeError("seeded prices are append-only history; restore from a backup instead")
