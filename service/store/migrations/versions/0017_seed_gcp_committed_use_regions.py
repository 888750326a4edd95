"""Seed the prices added to service/data/prices.csv: GCP's 1- and 3-year committed use prices of
its GPU machines in every region where the catalog offers them on demand (until now only
us-central1 and us-east4 were recorded): a2-highgpu-* and a2-megagpu-16g (A100 40GB),
a3-highgpu-1g/2g/4g and a3-megagpu-8g (H100; Google's list has none for a3-edgegpu-8g), and
g2-standard-4/24/48/96 (L4), from Google's Cloud Billing catalog as of 2026-07-30.

One catalog write when a database lacks the rows (``append_bundled_prices``); a database seeded
from the current prices.csv (0002) holds them already, and nothing is written.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-07
"""

from __future__ import annotations

from datetime import UTC, datetime

from alembic import op

from service.store.migrations.backfill import append_bundled_prices

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    append_bundled_prices(op.get_bind(), datetime.now(UTC), chunk=50)


def downgrade() -> None:
    """Nothing to undo: 0017 changes no schema, and its observations stay (price history is
    append-only)."""
