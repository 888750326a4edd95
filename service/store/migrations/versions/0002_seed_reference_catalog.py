"""Seed the bundled reference catalog (service/data/gpus.csv and prices.csv) as revision 1.

The data is read from the installed package, never from outside the repository. Later
refreshes arrive as new price observations (``POST /v1/prices``, ``gpuplan catalog import``)
or new migrations; observations are append-only, so re-seeding never rewrites history.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29
"""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

from service.store.csv_format import bundled_text, parse_gpus_csv, parse_prices_csv
from service.store.models import CatalogStateRow, GpuRow, PricePointRow
from service.store.rows import gpu_to_row_values, price_to_row_values

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

SEED_REVISION = 1


def upgrade() -> None:
    now = datetime.now(UTC)
    gpus = parse_gpus_csv(bundled_text("gpus.csv"))
    prices = parse_prices_csv(bundled_text("prices.csv"), ingested_at=now)
    # Only the columns the table has at this revision: a GpuSpec field added later gets its
    # column, and the bundled GPUs their values, from its own migration (see CONTRIBUTING.md).
    present = {column["name"] for column in sa.inspect(op.get_bind()).get_columns("gpus")}
    op.bulk_insert(
        GpuRow.__table__,
        [
            {k: v for k, v in values.items() if k in present}
            for values in (
                gpu_to_row_values(g, revision=SEED_REVISION, updated_at=now) for g in gpus
            )
        ],
    )
    op.bulk_insert(
        PricePointRow.__table__,  # type: ignore[arg-type]
        [price_to_row_values(p, revision=SEED_REVISION, ingested_at=now) for p in prices],
    )
    op.execute(
        sa.update(CatalogStateRow)
        .where(CatalogStateRow.id == 1)
        .values(revision=SEED_REVISION, updated_at=now)
    )


def downgrade() -> None:
    raise RuntimeError("the seed catalog is append-only history; restore from a backup instead")
