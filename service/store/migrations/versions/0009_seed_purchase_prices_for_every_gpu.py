"""Seed the purchase prices (and the AWS p5 1-year reservation) added to
service/data/prices.csv so that every GPU has a dated, sourced purchase price or a documented
reason for having none (service/data/purchase_gaps.csv).

Databases seeded before these rows existed get them here, as one catalog write (the revision
moves on, so cached plans are re-keyed). A database seeded from the current ``prices.csv`` by
0002 holds them already: nothing is written and its revision stays.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-02
"""

from __future__ import annotations

from datetime import UTC, datetime

from alembic import op

from service.store.migrations.backfill import append_bundled_prices

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    append_bundled_prices(op.get_bind(), datetime.now(UTC), chunk=50)


def downgrade() -> None:
    raise RuntimeError("seeded prices are append-only history; restore from a backup instead")
