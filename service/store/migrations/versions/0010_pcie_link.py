"""pcie_link: each GPU's host PCIe link lanes (``pcie_lanes``) and whether cards write into each
other's memory over PCIe (``pcie_peer_to_peer``), which the tensor-parallel all-reduce over
PCIe is costed with; the bundled GPUs get their ``gpus.csv`` values.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from service.store.migrations.backfill import fill_gpu_column

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "gpus", sa.Column("pcie_lanes", sa.Integer(), nullable=False, server_default="16")
    )
    op.add_column(
        "gpus",
        sa.Column("pcie_peer_to_peer", sa.Boolean(), nullable=False, server_default=sa.true()),
    )
    fill_gpu_column("pcie_lanes", "pcie_peer_to_peer")


def downgrade() -> None:
    with op.batch_alter_table("gpus") as batch:
        batch.drop_column("pcie_peer_to_peer")
        batch.drop_column("pcie_lanes")
