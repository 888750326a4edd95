"""price_gaps: why the catalog holds no price of one kind for one GPU, seeded from
service/data/purchase_gaps.csv (the GPUs without a purchase price), so that a plan that needs
the price says the documented reason for each such GPU.

Storing the reasons is one catalog write: the revision moves on, so plans cached before it
(which gave no reason) are re-keyed.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-02
"""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

from service.store.migrations.backfill import store_bundled_gaps

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "price_gaps",
        sa.Column("gpu_id", sa.String(64), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("revision", sa.BigInteger(), nullable=False),
        sa.CheckConstraint(
            "kind IN ('on_demand', 'spot', 'reserved_1y', 'reserved_3y', 'purchase')",
            name=op.f("ck_price_gaps_kind_known"),
        ),
        sa.ForeignKeyConstraint(["gpu_id"], ["gpus.id"], name=op.f("fk_price_gaps_gpu_id_gpus")),
        sa.PrimaryKeyConstraint("gpu_id", "kind", name=op.f("pk_price_gaps")),
    )
    store_bundled_gaps(op.get_bind(), datetime.now(UTC))


def downgrade() -> None:
    op.drop_table("price_gaps")
