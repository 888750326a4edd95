"""Catalog schema: gpus, append-only price_points, catalog_state revision.

Revision ID: 0001
Revises:
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from service.store.models import BigIntId, UtcDateTime

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

_APPEND_ONLY_PG = (
    """
    CREATE FUNCTION price_points_append_only() RETURNS trigger AS $$
    BEGIN
        RAISE EXCEPTION 'price_points is append-only: % refused', TG_OP;
    END;
    $$ LANGUAGE plpgsql
    """,
    """
    CREATE TRIGGER price_points_no_update BEFORE UPDATE OR DELETE ON price_points
        FOR EACH ROW EXECUTE FUNCTION price_points_append_only()
    """,
)


def upgrade() -> None:
    op.create_table(
        "gpus",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("vendor", sa.String(64), nullable=False),
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column("architecture", sa.String(128), nullable=False),
        sa.Column("launch_year", sa.Integer(), nullable=False),
        sa.Column("memory_gb", sa.Float(), nullable=False),
        sa.Column("memory_type", sa.String(32), nullable=False),
        sa.Column("memory_bandwidth_gbps", sa.Float(), nullable=False),
        sa.Column("fp32_tflops", sa.Float(), nullable=True),
        sa.Column("tf32_tflops", sa.Float(), nullable=True),
        sa.Column("fp16_tflops", sa.Float(), nullable=True),
        sa.Column("fp8_tflops", sa.Float(), nullable=True),
        sa.Column("fp4_tflops", sa.Float(), nullable=True),
        sa.Column("int8_tops", sa.Float(), nullable=True),
        sa.Column("tdp_w", sa.Float(), nullable=True),
        sa.Column("interconnect", sa.String(128), nullable=False),
        sa.Column("interconnect_bandwidth_gbps", sa.Float(), nullable=False),
        sa.Column("nvlink_domain", sa.Integer(), nullable=False),
        sa.Column("pcie_gen", sa.Integer(), nullable=False),
        sa.Column("form_factor", sa.String(32), nullable=False),
        sa.Column("mig_instances", sa.Integer(), nullable=False),
        sa.Column("aliases", sa.JSON(), nullable=False),
        sa.Column("sources", sa.JSON(), nullable=False),
        sa.Column("revision", sa.BigInteger(), nullable=False),
        sa.Column("updated_at", UtcDateTime(), nullable=False),
        sa.CheckConstraint("memory_gb > 0", name=op.f("ck_gpus_memory_positive")),
        sa.CheckConstraint("memory_bandwidth_gbps > 0", name=op.f("ck_gpus_bandwidth_positive")),
        sa.CheckConstraint("nvlink_domain >= 1", name=op.f("ck_gpus_nvlink_domain_positive")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_gpus")),
    )
    op.create_table(
        "price_points",
        sa.Column("id", BigIntId, autoincrement=True, nullable=False),
        sa.Column("gpu_id", sa.String(64), nullable=False),
        sa.Column("provider", sa.String(64), nullable=False),
        sa.Column("region", sa.String(64), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("usd", sa.Float(), nullable=False),
        sa.Column("instance_type", sa.String(128), nullable=False),
        sa.Column("gpus_per_instance", sa.Integer(), nullable=False),
        sa.Column("observed_at", UtcDateTime(), nullable=False),
        sa.Column("source", sa.Text(), nullable=False),
        sa.Column("ingested_at", UtcDateTime(), nullable=False),
        sa.Column("revision", sa.BigInteger(), nullable=False),
        sa.CheckConstraint("usd > 0", name=op.f("ck_price_points_usd_positive")),
        sa.CheckConstraint(
            "gpus_per_instance >= 1", name=op.f("ck_price_points_gpus_per_instance_positive")
        ),
        sa.CheckConstraint(
            "kind IN ('on_demand', 'spot', 'reserved_1y', 'reserved_3y', 'purchase')",
            name=op.f("ck_price_points_kind_known"),
        ),
        sa.ForeignKeyConstraint(["gpu_id"], ["gpus.id"], name=op.f("fk_price_points_gpu_id_gpus")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_price_points")),
        sa.UniqueConstraint(
            "gpu_id",
            "provider",
            "region",
            "kind",
            "instance_type",
            "observed_at",
            name="uq_price_points_observation",
        ),
    )
    op.create_index("ix_price_points_gpu_observed", "price_points", ["gpu_id", "observed_at", "id"])
    op.create_table(
        "catalog_state",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("revision", sa.BigInteger(), nullable=False),
        sa.Column("updated_at", UtcDateTime(), nullable=False),
        sa.CheckConstraint("id = 1", name=op.f("ck_catalog_state_single_row")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_catalog_state")),
    )
    op.execute(
        sa.text(
            "INSERT INTO catalog_state (id, revision, updated_at) VALUES (1, 0, CURRENT_TIMESTAMP)"
        )
    )

    if op.get_bind().dialect.name == "postgresql":
        for statement in _APPEND_ONLY_PG:
            op.execute(statement)
    else:
        for event in ("UPDATE", "DELETE"):
            op.execute(
                f"CREATE TRIGGER price_points_no_{event.lower()} BEFORE {event} ON price_points "
                f"BEGIN SELECT RAISE(ABORT, 'price_points is append-only: {event} refused'); END"
            )


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER IF EXISTS price_points_no_update ON price_points")
        op.execute("DROP FUNCTION IF EXISTS price_points_append_only()")
    op.drop_table("catalog_state")
    op.drop_index("ix_price_points_gpu_observed", table_name="price_points")
    op.drop_table("price_points")
    op.drop_table("gpus")
