"""price_imports: one row per imported price-catalog file (content hash, observed_at).

A re-import of the same file without an explicit date reuses the recorded ``observed_at``, so
it inserts nothing (``gpuplan catalog import --format skypilot``, ``POST /v1/prices/import``).

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from service.store.models import BigIntId, UtcDateTime

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "price_imports",
        sa.Column("id", BigIntId, autoincrement=True, nullable=False),
        sa.Column("format", sa.String(16), nullable=False),
        sa.Column("provider", sa.String(64), nullable=False),
        sa.Column("content_sha256", sa.String(64), nullable=False),
        sa.Column("observed_at", UtcDateTime(), nullable=False),
        sa.Column("imported_at", UtcDateTime(), nullable=False),
        sa.Column("rows", sa.Integer(), nullable=False),
        sa.Column("observations", sa.Integer(), nullable=False),
        sa.Column("inserted", sa.Integer(), nullable=False),
        sa.Column("revision", sa.BigInteger(), nullable=False),
        sa.Column("source", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_price_imports")),
    )
    op.create_index(
        "ix_price_imports_content",
        "price_imports",
        ["format", "provider", "content_sha256", "observed_at"],
    )


def downgrade() -> None:
    op.drop_index("ix_price_imports_content", table_name="price_imports")
    op.drop_table("price_imports")
