"""Seed the prices added to service/data/prices.csv: on-demand and Spot prices of GCP's whole
G2 machines (L4: g2-standard-4, -24, -48 and -96) in the 17 regions where the catalog prices the
L4 alone, and of a3-megagpu-8g (8 x H100) in 9 regions, from Google's Cloud Billing catalog as
of 2026-07-30. Until now these GPUs were priced without the VM they run in (the SkyPilot
snapshot lists no host price for them); the catalog's current offers now leave such a GPU-only
offer out wherever a whole machine with as many GPUs is priced (domain/superseded.py).

One catalog write when a database lacks the rows (``append_bundled_prices``); a database seeded
from the current prices.csv (0002) holds them already, and nothing is written.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-07
"""

from __future__ import annotations

from datetime import UTC, datetime

from alembic import op

from service.store.migrations.backfill import append_bundled_prices

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    append_bundled_prices(op.get_bind(), datetime.now(UTC), chunk=50)


def downgrade() -> None:
    """Nothing to undo: 0016 changes no schema, and its observations stay (price history is
    append-only)."""
