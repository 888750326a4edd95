"""The API's database role (``GPUPLAN_SERVICE_ROLE``) can read and ingest, and nothing more:
no UPDATE, DELETE or TRUNCATE of price, benchmark or calibration history, no disabling their
triggers (Postgres only)."""

from __future__ import annotations

import asyncio
import os
import secrets
import subprocess
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import asyncpg
import pytest
import pytest_asyncio
from litestar.testing import AsyncTestClient
from sqlalchemy.engine.url import make_url

from service.app import create_app
from service.domain.catalog import PricePoint
from service.store.database import create_engine
from service.store.grants import SEQUENCE_TABLES, TABLE_PRIVILEGES, grant_service_role
from service.store.repositories import CatalogRepository
from tests.conftest import admin, base_settings
from tests.support.databases import PostgresDatabases
from tests.support.services import Endpoints, unavailable

pytestmark = pytest.mark.integration

FIXTURES = Path(__file__).parents[1] / "fixtures" / "benchmarks"
A100 = {"gpu": "a100-sxm-80gb", "tensor_parallel": "1", "engine_version": "0.11.0",
        "precision": "bf16", "labels": "team:search"}  # fmt: skip


def _dsn(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


async def _drop_role(owner_url: str, role: str) -> None:
    """Drop ``role`` and what it owns (the owner's connection)."""
    owner = await asyncpg.connect(_dsn(owner_url))
    try:
        await owner.execute(f"DROP OWNED BY {role}")
        await owner.execute(f"DROP ROLE {role}")
    finally:
        await owner.close()


@pytest_asyncio.fixture(loop_scope="session")
async def owner_and_service_urls(
    endpoints: Endpoints, postgres_databases: PostgresDatabases | None
) -> AsyncIterator[tuple[str, str]]:
    """A fresh migrated database, and a new login role granted the service's privileges in it;
    the role is dropped afterwards."""
    if postgres_databases is None or endpoints.postgres_admin_url is None:
        unavailable("Postgres", endpoints.why_missing)
        raise AssertionError("unreachable")
    owner_url = await postgres_databases.fresh()
    role = f"gpuplan_svc_{secrets.token_hex(4)}"
    password = secrets.token_hex(12)
    admin = await asyncpg.connect(_dsn(endpoints.postgres_admin_url))
    try:
        await admin.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{password}'")
    finally:
        await admin.close()
    engine = create_engine(owner_url)
    try:
        await grant_service_role(engine, role)
        await grant_service_role(engine, role)  # idempotent: every `gpuplan migrate` runs it
    finally:
        await engine.dispose()
    service_url = (
        make_url(owner_url)
        .set(username=role, password=password)
        .render_as_string(hide_password=False)
    )
    try:
        yield owner_url, service_url
    finally:
        await _drop_role(owner_url, role)


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE price_points SET usd = 1",
        "DELETE FROM price_points",
        "TRUNCATE price_points",
        "ALTER TABLE price_points DISABLE TRIGGER price_points_no_update",
        "ALTER TABLE price_points DISABLE TRIGGER ALL",
        "DROP TRIGGER price_points_no_truncate ON price_points",
        "DELETE FROM gpus",
        "DELETE FROM price_gaps",
        "UPDATE price_gaps SET reason = 'x'",
        "DELETE FROM catalog_state",
        "UPDATE alembic_version SET version_num = '0001'",
        *(
            statement.format(table=table)
            for table in ("benchmark_imports", "benchmark_measurements", "calibration_profiles")
            for statement in (
                "UPDATE {table} SET id = id",
                "DELETE FROM {table}",
                "TRUNCATE {table}",
                "ALTER TABLE {table} DISABLE TRIGGER {table}_no_update",
                "DROP TRIGGER {table}_no_update ON {table}",
            )
        ),
    ],
)
async def test_the_service_role_cannot_rewrite_history(
    owner_and_service_urls: tuple[str, str], statement: str
) -> None:
    _, service_url = owner_and_service_urls
    conn = await asyncpg.connect(_dsn(service_url))
    try:
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await conn.execute(statement)
    finally:
        await conn.close()


async def test_the_service_role_reads_ingests_and_replaces_specs(
    owner_and_service_urls: tuple[str, str],
) -> None:
    _, service_url = owner_and_service_urls
    engine = create_engine(service_url)
    try:
        repo = CatalogRepository(engine)
        now = datetime.now(UTC)
        snapshot = await repo.snapshot()
        assert snapshot.revision >= 1 and snapshot.prices and snapshot.gaps
        point = PricePoint(
            gpu_id="l40s",
            provider="rolecloud",
            region="r1",
            kind="on_demand",
            usd=0.9,
            instance_type="rc.1x",
            gpus_per_instance=1,
            observed_at=datetime(2026, 10, 1, tzinfo=UTC),
            source="test",
        )
        result = await repo.ingest_prices([point], now)
        assert result.inserted == 1
        spec = next(g for g in snapshot.gpus if g.id == "l40s")
        put = await repo.put_gpu(spec, now)
        assert not put.created and put.revision == result.revision + 1
    finally:
        await engine.dispose()


async def test_the_service_role_imports_benchmarks_and_fits_calibrations(
    owner_and_service_urls: tuple[str, str], endpoints: Endpoints, redis_prefix: str, tmp_path: Path
) -> None:
    """Every endpoint that reads or writes the benchmark and calibration tables, served by an
    app that connects as the service role."""
    _, service_url = owner_and_service_urls
    settings = base_settings(service_url, tmp_path, redis_url=endpoints.redis_url)
    files = sorted(FIXTURES.glob("vllm-a100-*.json"))
    async with AsyncTestClient(create_app(settings, cache_prefix=redis_prefix)) as client:
        for path in files:
            response = await client.post(
                "/v1/benchmarks",
                params=A100,
                content=path.read_bytes(),
                headers={**admin(), "Content-Type": "application/json"},
            )
            assert response.status_code == 201, response.text
        again = await client.post(
            "/v1/benchmarks",
            params=A100,
            content=files[0].read_bytes(),
            headers={**admin(), "Content-Type": "application/json"},
        )
        assert again.status_code == 200 and again.json()["already_imported"], again.text
        listed = await client.get("/v1/benchmarks")
        assert listed.status_code == 200 and listed.json()["count"] == len(files), listed.text
        body = {"name": "team-search", "engine": "vllm", "selection": {"labels": ["team:search"]}}
        for version in (1, 2):
            fitted = await client.post("/v1/calibrations", json=body, headers=admin())
            assert fitted.status_code == 201, fitted.text
            assert fitted.json()["version"] == version and fitted.json()["files"] == len(files)
        profiles = await client.get("/v1/calibrations")
        assert profiles.status_code == 200 and profiles.json()["count"] == 1, profiles.text
        first = await client.get("/v1/calibrations/team-search", params={"version": "1"})
        assert first.status_code == 200 and first.json()["version"] == 1, first.text
        report = await client.get("/v1/calibrations/team-search/report")
        assert report.status_code == 200 and report.json()["cells"], report.text
        estimate = {
            "model": "qwen3-14b", "gpu": "a100-sxm-80gb", "tensor_parallel": 1,
            "precision": "bf16", "engine": "vllm", "engine_version": "0.11",
            "prompt_tokens": 2000, "output_tokens": 100, "concurrency": 8,
        }  # fmt: skip
        calibrated = await client.post(
            "/v1/estimate", json={**estimate, "calibration": "team-search@v1"}
        )
        assert calibrated.status_code == 200, calibrated.text
        assert any(a.startswith("Calibration profile team-search v1")
                   for a in calibrated.json()["assumptions"])  # fmt: skip
        unknown = await client.post("/v1/estimate", json={**estimate, "calibration": "nobody"})
        assert unknown.status_code == 404 and unknown.json()["field"] == "calibration"


async def _privileges(owner_url: str, role: str) -> dict[str, set[str]]:
    """What ``role`` may do on each table of the public schema, and ``USAGE`` on the id
    sequence of a table (listed under the table's name)."""
    owner = await asyncpg.connect(_dsn(owner_url))
    try:
        tables = await owner.fetch(
            "SELECT tablename, p FROM pg_tables, "
            "unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE']) AS p "
            "WHERE schemaname = 'public' "
            "AND has_table_privilege($1, quote_ident(tablename), p)",
            role,
        )
        sequences = await owner.fetch(
            "SELECT sequencename FROM pg_sequences WHERE schemaname = 'public' "
            "AND has_sequence_privilege($1, quote_ident(sequencename), 'USAGE')",
            role,
        )
    finally:
        await owner.close()
    granted: dict[str, set[str]] = {}
    for table, privilege in tables:
        granted.setdefault(table, set()).add(privilege)
    for (sequence,) in sequences:
        granted.setdefault(sequence.removesuffix("_id_seq"), set()).add("USAGE")
    return granted


def _expected(tables: set[str]) -> dict[str, set[str]]:
    return {
        table: {p.strip() for p in privileges.split(",")}
        | ({"USAGE"} if table in SEQUENCE_TABLES else set())
        for table, privileges in TABLE_PRIVILEGES.items()
        if table in tables
    }


async def test_migrating_to_an_older_revision_grants_the_tables_it_has(
    endpoints: Endpoints, postgres_databases: PostgresDatabases | None, tmp_path: Path
) -> None:
    """``gpuplan migrate --to 0003`` with a service role grants on the tables 0003 has instead
    of failing on those later migrations add (price_imports, benchmark and calibration
    tables, price_gaps); ``gpuplan migrate`` then grants the rest."""
    if postgres_databases is None or endpoints.postgres_admin_url is None:
        unavailable("Postgres", endpoints.why_missing)
        raise AssertionError("unreachable")
    owner_url = await postgres_databases.empty()
    role = f"gpuplan_svc_{secrets.token_hex(4)}"
    admin = await asyncpg.connect(_dsn(endpoints.postgres_admin_url))
    try:
        await admin.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{secrets.token_hex(12)}'")
    finally:
        await admin.close()
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUPLAN_")}
    env |= {"GPUPLAN_DATABASE_URL": owner_url, "GPUPLAN_SERVICE_ROLE": role,
            "GPUPLAN_DATA_DIR": str(tmp_path / "data")}  # fmt: skip

    async def migrate(*args: str) -> str:
        result = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-m", "service.cli", "migrate", *args],
            env=env, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        assert f"role {role} granted the service's privileges only" in result.stdout
        return result.stdout

    try:
        assert "is at migration 0003" in await migrate("--to", "0003")
        older = {"alembic_version", "gpus", "price_points", "catalog_state"}
        assert await _privileges(owner_url, role) == _expected(older)
        await migrate()
        assert await _privileges(owner_url, role) == _expected(set(TABLE_PRIVILEGES))
    finally:
        await _drop_role(owner_url, role)
