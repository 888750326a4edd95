"""benchmark_imports, benchmark_measurements and calibration_profiles refuse TRUNCATE too
(Postgres), as price_points does since 0003.

The row-level triggers of 0007 and 0008 refuse UPDATE and DELETE, but ``TRUNCATE`` fires no
row triggers, so on Postgres it emptied the append-only history (even ``TRUNCATE
benchmark_imports CASCADE`` with its measurements). A statement-level ``BEFORE TRUNCATE``
trigger on each raises with the table's own function. SQLite has no TRUNCATE: its ``DELETE
FROM`` without a WHERE clause (the "truncate optimisation") is not used on a table with
triggers, so the DELETE triggers of 0007 and 0008 already refuse it.

``price_imports`` (a record of each imported file) and ``price_gaps`` (reasons written by
migrations, which a later one may revise) are not append-only history: they have no row
triggers, so they get no TRUNCATE trigger either.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-02
"""

from __future__ import annotations

from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

TABLES = ("benchmark_imports", "benchmark_measurements", "calibration_profiles")


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for table in TABLES:
            op.execute(
                f"CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table} "
                f"FOR EACH STATEMENT EXECUTE FUNCTION {table}_append_only()"
            )


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for table in reversed(TABLES):
            op.execute(f"DROP TRIGGER IF EXISTS {table}_no_truncate ON {table}")
