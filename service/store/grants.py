"""Least privilege for the role the API runs as (Postgres only).

``gpuplan migrate`` runs as the owner of the tables. When ``GPUPLAN_SERVICE_ROLE`` names
another role, it then grants that role exactly what the service's statements need, and revokes
everything else, after every migration (so tables added later are covered):

- ``gpus``: SELECT, INSERT, UPDATE (``PUT /v1/gpus/{id}`` creates or replaces a spec);
- ``price_points``: SELECT, INSERT, and USAGE on its id sequence (append-only history: no
  UPDATE, DELETE or TRUNCATE, on top of the triggers);
- ``price_imports``: SELECT, INSERT, and USAGE on its id sequence (``POST /v1/prices/import``
  records each imported file);
- ``price_gaps``: SELECT (the documented reasons for missing prices are written by
  migrations only);
- ``catalog_state``: SELECT, UPDATE (the revision row, locked with ``SELECT ... FOR UPDATE``);
- ``benchmark_imports``, ``benchmark_measurements``: SELECT, INSERT, and USAGE on their id
  sequences (``POST /v1/benchmarks`` stores a file with its measurements, calibration fits
  read them). Append-only: no UPDATE, DELETE or TRUNCATE, on top of the triggers;
- ``calibration_profiles``: SELECT, INSERT, and USAGE on its id sequence (``POST
  /v1/calibrations`` stores each fit as the next version; estimates and plans read them).
  Append-only like the benchmark tables;
- ``alembic_version``: SELECT (the startup check that the schema is at head).

Grants go to the tables that exist, so ``gpuplan migrate --to <older revision>`` grants what
that revision has (and the sequences of those tables) instead of failing on a table a later
migration adds; the next ``gpuplan migrate`` grants the rest.

A role that owns nothing cannot ``ALTER TABLE ... DISABLE TRIGGER`` or drop the triggers, so
the append-only rule holds against the service's own credentials. The role itself (LOGIN,
password) is created by the operator: deploy/postgres/ shows how.
"""

from __future__ import annotations

from collections.abc import Collection

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

TABLE_PRIVILEGES = {
    "alembic_version": "SELECT",
    "gpus": "SELECT, INSERT, UPDATE",
    "price_points": "SELECT, INSERT",
    "price_imports": "SELECT, INSERT",
    "price_gaps": "SELECT",
    "catalog_state": "SELECT, UPDATE",
    "benchmark_imports": "SELECT, INSERT",
    "benchmark_measurements": "SELECT, INSERT",
    "calibration_profiles": "SELECT, INSERT",
}


SEQUENCE_TABLES = (
    "price_points",
    "price_imports",
    "benchmark_imports",
    "benchmark_measurements",
    "calibration_profiles",
)
"""Tables whose id sequence the role may advance (the tables it inserts into)."""


def grant_statements(
    quoted_role: str, sequences: list[str], tables: Collection[str] | None = None
) -> list[str]:
    """The statements for ``quoted_role`` (already quoted as an SQL identifier); ``sequences``
    are the id sequences of ``SEQUENCE_TABLES`` that exist, ``tables`` the tables of
    ``TABLE_PRIVILEGES`` that exist (all of them when ``None``)."""
    statements = [
        f"REVOKE ALL ON ALL TABLES IN SCHEMA public FROM {quoted_role}",
        f"REVOKE ALL ON ALL SEQUENCES IN SCHEMA public FROM {quoted_role}",
        f"GRANT USAGE ON SCHEMA public TO {quoted_role}",
    ]
    statements += [
        f"GRANT {p} ON {t} TO {quoted_role}"
        for t, p in TABLE_PRIVILEGES.items()
        if tables is None or t in tables
    ]
    statements += [f"GRANT USAGE ON SEQUENCE {s} TO {quoted_role}" for s in sequences]
    return statements


async def grant_service_role(engine: AsyncEngine, role: str) -> None:
    """Grant ``role`` the service's privileges and nothing more (one transaction)."""
    if engine.dialect.name != "postgresql":
        return
    quoted = engine.dialect.identifier_preparer.quote(role)
    async with engine.begin() as connection:
        exists = await connection.scalar(
            text("SELECT 1 FROM pg_roles WHERE rolname = :role"), {"role": role}
        )
        if not exists:
            raise LookupError(
                f"role {role!r} (GPUPLAN_SERVICE_ROLE) does not exist: create it first "
                "(deploy/postgres/service-role.sql)"
            )
        tables = set(
            await connection.scalars(
                text("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
            )
        ) & set(TABLE_PRIVILEGES)
        sequences = []
        for table in SEQUENCE_TABLES:
            if table not in tables:
                continue
            sequence = await connection.scalar(
                text("SELECT pg_get_serial_sequence(:table, 'id')"), {"table": table}
            )
            if sequence is not None:
                sequences.append(str(sequence))
        for statement in grant_statements(quoted, sequences, tables):
            await connection.execute(text(statement))
