"""The service role's grants cover every table the ORM maps, and the id sequence of every
table the role inserts into: a table added later cannot be left out (the API would answer
"permission denied" on it when it runs as ``GPUPLAN_SERVICE_ROLE``)."""

from __future__ import annotations

import pytest

from service.store.grants import SEQUENCE_TABLES, TABLE_PRIVILEGES, grant_statements
from service.store.models import Base

APPEND_ONLY = ("price_points", "benchmark_imports", "benchmark_measurements",
               "calibration_profiles")  # fmt: skip
"""The tables whose migrations install append-only triggers."""


def privileges(table: str) -> set[str]:
    return {p.strip() for p in TABLE_PRIVILEGES[table].split(",")}


def test_every_mapped_table_and_the_schema_version_have_their_privileges() -> None:
    assert set(TABLE_PRIVILEGES) == {*Base.metadata.tables, "alembic_version"}
    for table in TABLE_PRIVILEGES:
        assert "SELECT" in privileges(table), table


def test_the_role_advances_exactly_the_id_sequences_of_the_tables_it_inserts_into() -> None:
    inserts_with_serial_id = {
        name
        for name, table in Base.metadata.tables.items()
        if "INSERT" in privileges(name) and table.autoincrement_column is not None
    }
    assert set(SEQUENCE_TABLES) == inserts_with_serial_id
    assert len(SEQUENCE_TABLES) == len(set(SEQUENCE_TABLES))


@pytest.mark.parametrize("table", APPEND_ONLY)
def test_append_only_tables_are_granted_no_update_delete_or_truncate(table: str) -> None:
    assert privileges(table) == {"SELECT", "INSERT"}


def test_the_statements_revoke_first_then_grant_each_table_and_sequence() -> None:
    statements = grant_statements('"svc"', ["public.benchmark_imports_id_seq"])
    assert statements[0].startswith("REVOKE ALL ON ALL TABLES")
    assert 'GRANT SELECT, INSERT ON calibration_profiles TO "svc"' in statements
    assert statements[-1] == 'GRANT USAGE ON SEQUENCE public.benchmark_imports_id_seq TO "svc"'


def test_only_the_tables_that_exist_are_granted() -> None:
    """After ``gpuplan migrate --to`` an older revision, later tables do not exist yet."""
    older = {"alembic_version", "gpus", "price_points", "catalog_state"}
    statements = grant_statements('"svc"', ["public.price_points_id_seq"], older)
    granted = {s.split(" ON ")[1].split(" TO ")[0] for s in statements if s.startswith("GRANT ")}
    assert granted == older | {"SCHEMA public", "SEQUENCE public.price_points_id_seq"}
