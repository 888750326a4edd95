"""The API's database role (``GPUPLAN_SERVICE_ROLE``) can read and ingest, and nothing more:
no UPDATE, DELETE or TRUNCATE of price history, no disabling its triggers (Postgres only)."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import asyncpg
import pytest
import pytest_asyncio
from sqlalchemy.engine.url import make_url

from service.domain.catalog import PricePoint
from service.store.database import create_engine
from service.store.grants import grant_service_role
from service.store.repositories import CatalogRepository
from tests.support.databases import PostgresDatabases
from tests.support.services import Endpoints, unavailable

pytestmark = pytest.mark.integration


def _dsn(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


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
        owner = await asyncpg.connect(_dsn(owner_url))
        try:
            await owner.execute(f"DROP OWNED BY {role}")
            await owner.execute(f"DROP ROLE {role}")
        finally:
            await owner.close()


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
