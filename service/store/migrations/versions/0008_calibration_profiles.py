"""calibration_profiles: named, versioned corrections fitted on a team's benchmark files
(``POST /v1/calibrations``, ``gpuplan calibrate``), append-only.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from service.store.models import BigIntId, UtcDateTime

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "calibration_profiles",
        sa.Column("id", BigIntId, autoincrement=True, nullable=False),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("engine", sa.String(16), nullable=False),
        sa.Column("selection", sa.JSON(), nullable=False),
        sa.Column("corrections", sa.JSON(), nullable=False),
        sa.Column("report", sa.JSON(), nullable=False),
        sa.Column("rows", sa.Integer(), nullable=False),
        sa.Column("files", sa.Integer(), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("key_id", sa.String(32), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_calibration_profiles")),
        sa.UniqueConstraint("name", "version", name="uq_calibration_profiles_name_version"),
    )
    if op.get_bind().dialect.name == "postgresql":
        op.execute(
            "CREATE FUNCTION calibration_profiles_append_only() RETURNS trigger AS $$ BEGIN "
            "RAISE EXCEPTION 'calibration_profiles is append-only: % refused', TG_OP; END; $$ "
            "LANGUAGE plpgsql"
        )
        op.execute(
            "CREATE TRIGGER calibration_profiles_no_update BEFORE UPDATE OR DELETE ON "
            "calibration_profiles FOR EACH ROW EXECUTE FUNCTION calibration_profiles_append_only()"
        )
        return
    for event in ("UPDATE", "DELETE"):
        op.execute(
            f"CREATE TRIGGER calibration_profiles_no_{event.lower()} BEFORE {event} ON "
            "calibration_profiles BEGIN SELECT RAISE(ABORT, "
            f"'calibration_profiles is append-only: {event} refused'); END"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER IF EXISTS calibration_profiles_no_update ON calibration_profiles")
        op.execute("DROP FUNCTION IF EXISTS calibration_profiles_append_only()")
    op.drop_table("calibration_profiles")
