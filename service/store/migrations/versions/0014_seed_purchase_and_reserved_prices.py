"""Seed the prices added to service/data/prices.csv: purchase prices that close four of the
documented gaps of service/data/purchase_gaps.csv (H100 NVL: a dated Amazon listing; A100 SXM4
40GB, A10 and V100 PCIe 16GB: release-era prices from Epoch AI's hardware dataset, each with its
own source), GCP's 1- and 3-year committed use prices for its A100, H100, L4 and RTX PRO 6000
machines, the RTX PRO 6000 machines' on-demand and Spot prices, and current on-demand and Spot
prices of every GCP a2, a3-highgpu and a3-edgegpu offer the catalog holds (2026-07-30; the
SkyPilot snapshot prices about 40% of them at 0.52-0.66x the Cloud Billing catalog's), AWS's 1- and
3-year Standard reserved instance prices for its p3, p3dn, g5 and g4dn instances (2022-07-07),
and p5.48xlarge's current us-east-1 on-demand price (2026-08-22; the snapshot's predates AWS's
June 2025 cut).

One catalog write: the rows a database lacks are appended (``append_bundled_prices``) and the
stored reasons for the four GPUs having no purchase price are deleted (``drop_priced_gaps``), so
``owned`` plans now cost them, and ``reserved_1y``/``reserved_3y`` plans have these offers. A
database seeded from the current files (0002 and 0011) holds the rows and none of those
reasons: nothing is written and its revision stays.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-07
"""

from __future__ import annotations

from datetime import UTC, datetime

from alembic import op

from service.store.migrations.backfill import (
    append_bundled_prices,
    drop_priced_gaps,
    next_catalog_revision,
)

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    bind = op.get_bind()
    now = datetime.now(UTC)
    appended = append_bundled_prices(bind, now, chunk=50)
    if drop_priced_gaps(bind) and not appended:
        next_catalog_revision(bind, now)


def downgrade() -> None:
    """Nothing to undo: 0014 changes no schema, its observations stay (price history is
    append-only), and the reasons it deleted would contradict the purchase prices that stay."""
