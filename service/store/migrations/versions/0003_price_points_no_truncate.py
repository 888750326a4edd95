"""price_points refuses TRUNCATE too (Postgres).

The row-level triggers of 0001 refuse UPDATE and DELETE, but ``TRUNCATE`` fires no row
triggers, so on Postgres it emptied the append-only history. A statement-level ``BEFORE
TRUNCATE`` trigger raises with the same function. SQLite has no TRUNCATE: its ``DELETE FROM``
without a WHERE clause (the "truncate optimisation") is not used on a table with triggers, so
0001's DELETE trigger already refuses it.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01
"""

from __future__ import annotations

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(
            "CREATE TRIGGER price_points_no_truncate BEFORE TRUNCATE ON price_points "
            "FOR EACH STATEMENT EXECUTE FUNCTION price_points_append_only()"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER IF EXISTS price_points_no_truncate ON price_points")
