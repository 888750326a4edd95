"""benchmark_imports and benchmark_measurements: a team's own benchmark result files
(``POST /v1/benchmarks``, ``gpuplan benchmarks import``), append-only.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from service.store.models import BigIntId, UtcDateTime

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

_TABLES = ("benchmark_imports", "benchmark_measurements")


def upgrade() -> None:
    op.create_table(
        "benchmark_imports",
        sa.Column("id", BigIntId, autoincrement=True, nullable=False),
        sa.Column("content_sha256", sa.String(64), nullable=False),
        sa.Column("format", sa.String(16), nullable=False),
        sa.Column("filename", sa.String(255), nullable=True),
        sa.Column("labels", sa.JSON(), nullable=False),
        sa.Column("key_id", sa.String(32), nullable=False),
        sa.Column("imported_at", UtcDateTime(), nullable=False),
        sa.Column("runs", sa.Integer(), nullable=False),
        sa.Column("measurements", sa.Integer(), nullable=False),
        sa.Column("context", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_benchmark_imports")),
        sa.UniqueConstraint("content_sha256", name=op.f("uq_benchmark_imports_content_sha256")),
    )
    op.create_table(
        "benchmark_measurements",
        sa.Column("id", BigIntId, autoincrement=True, nullable=False),
        sa.Column("import_id", BigIntId, nullable=False),
        sa.Column("run", sa.Integer(), nullable=False),
        sa.Column("gpu", sa.String(64), nullable=False),
        sa.Column("cards", sa.Integer(), nullable=False),
        sa.Column("tensor_parallel", sa.Integer(), nullable=False),
        sa.Column("model", sa.String(128), nullable=False),
        sa.Column("precision", sa.String(8), nullable=False),
        sa.Column("kv_precision", sa.String(8), nullable=False),
        sa.Column("engine", sa.String(16), nullable=False),
        sa.Column("engine_version", sa.String(32), nullable=False),
        sa.Column("prompt_tokens", sa.Float(), nullable=False),
        sa.Column("output_tokens", sa.Float(), nullable=False),
        sa.Column("load", sa.String(16), nullable=False),
        sa.Column("load_value", sa.Float(), nullable=False),
        sa.Column("metric", sa.String(32), nullable=False),
        sa.Column("stat", sa.String(8), nullable=False),
        sa.Column("value", sa.Float(), nullable=False),
        sa.CheckConstraint("value > 0", name=op.f("ck_benchmark_measurements_value_positive")),
        sa.ForeignKeyConstraint(
            ["import_id"],
            ["benchmark_imports.id"],
            name=op.f("fk_benchmark_measurements_import_id_benchmark_imports"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_benchmark_measurements")),
    )
    op.create_index("ix_benchmark_measurements_import", "benchmark_measurements", ["import_id"])
    op.create_index(
        "ix_benchmark_measurements_engine_gpu", "benchmark_measurements", ["engine", "gpu"]
    )
    for table in _TABLES:
        _append_only(table)


def _append_only(table: str) -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(
            f"CREATE FUNCTION {table}_append_only() RETURNS trigger AS $$ BEGIN "
            f"RAISE EXCEPTION '{table} is append-only: % refused', TG_OP; END; $$ "
            "LANGUAGE plpgsql"
        )
        op.execute(
            f"CREATE TRIGGER {table}_no_update BEFORE UPDATE OR DELETE ON {table} "
            f"FOR EACH ROW EXECUTE FUNCTION {table}_append_only()"
        )
        return
    for event in ("UPDATE", "DELETE"):
        op.execute(
            f"CREATE TRIGGER {table}_no_{event.lower()} BEFORE {event} ON {table} "
            f"BEGIN SELECT RAISE(ABORT, '{table} is append-only: {event} refused'); END"
        )


def downgrade() -> None:
    for table in reversed(_TABLES):
        if op.get_bind().dialect.name == "postgresql":
            op.execute(f"DROP TRIGGER IF EXISTS {table}_no_update ON {table}")
            op.execute(f"DROP FUNCTION IF EXISTS {table}_append_only()")
    op.drop_index("ix_benchmark_measurements_engine_gpu", table_name="benchmark_measurements")
    op.drop_index("ix_benchmark_measurements_import", table_name="benchmark_measurements")
    op.drop_table("benchmark_measurements")
    op.drop_table("benchmark_imports")
