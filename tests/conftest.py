"""Shared fixtures: real backends (Postgres + Redis, embedded SQLite + memory) and API clients."""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeAlias

import pytest
import pytest_asyncio
from litestar import Litestar
from litestar.testing import AsyncTestClient
from redis.asyncio import Redis

from service.app import create_app
from service.settings import Settings
from tests.support.databases import PostgresDatabases, SqliteDatabases
from tests.support.services import Endpoints, discover, unavailable

ADMIN_KEY = "test-admin-key-0123456789abcdef"
OTHER_KEY = "not-an-admin-key-0123456789abcd"
BACKENDS = ("sqlite", "postgres")

Client: TypeAlias = AsyncTestClient[Litestar]
"""The in-process HTTP client the `client` fixture yields."""


@pytest.fixture(scope="session")
def endpoints() -> Iterator[Endpoints]:
    with discover() as found:
        yield found


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def postgres_databases(endpoints: Endpoints) -> AsyncIterator[PostgresDatabases | None]:
    if endpoints.postgres_admin_url is None:
        yield None
        return
    dbs = PostgresDatabases(endpoints.postgres_admin_url)
    await dbs.prepare()
    try:
        yield dbs
    finally:
        await dbs.drop_all()


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def sqlite_databases(tmp_path_factory: pytest.TempPathFactory) -> SqliteDatabases:
    dbs = SqliteDatabases(tmp_path_factory.mktemp("sqlite"))
    await dbs.prepare()
    return dbs


def base_settings(database_url: str, tmp: Path, **overrides: Any) -> Settings:
    settings = Settings(
        database_url=database_url,
        data_dir=tmp,
        admin_keys=frozenset({ADMIN_KEY}),
        log_format="text",
        catalog_refresh_s=0.2,
        solver_workers=2,
        # each test starts its own app; one full collection per start would cost minutes
        settle_heap=False,
        # nor a helper process per start (tests/unit/test_helper_processes.py and
        # tests/integration/test_plans_api.py cover the service with them)
        solver_helper_processes=False,
    )
    return replace(settings, **overrides)


@pytest_asyncio.fixture(loop_scope="session")
async def redis_prefix(endpoints: Endpoints) -> AsyncIterator[str]:
    """A key prefix owned by one test; its keys are deleted afterwards."""
    prefix = f"gpuplan-test:{secrets.token_hex(4)}:"
    yield prefix
    if endpoints.redis_url is None:
        return
    client = Redis.from_url(endpoints.redis_url)
    # A test may have stopped Redis on purpose; its keys died with it then.
    with contextlib.suppress(Exception):
        keys = [k async for k in client.scan_iter(match=prefix + "*", count=500)]
        if keys:
            await client.delete(*keys)
    await client.aclose()


@pytest_asyncio.fixture(loop_scope="session", params=BACKENDS)
async def settings(
    request: pytest.FixtureRequest,
    endpoints: Endpoints,
    postgres_databases: PostgresDatabases | None,
    sqlite_databases: SqliteDatabases,
    tmp_path: Path,
) -> Settings:
    """Settings for a fresh, migrated, seeded database: embedded SQLite + in-process cache, or
    real Postgres + real Redis (the integration backend)."""
    if request.param == "sqlite":
        return base_settings(await sqlite_databases.fresh(), tmp_path)
    if postgres_databases is None or endpoints.redis_url is None:
        unavailable("Postgres and Redis", endpoints.why_missing)
        raise AssertionError("unreachable")
    return base_settings(await postgres_databases.fresh(), tmp_path, redis_url=endpoints.redis_url)


@pytest_asyncio.fixture(loop_scope="session")
async def client(settings: Settings, redis_prefix: str) -> AsyncIterator[Client]:
    app = create_app(settings, cache_prefix=redis_prefix)
    async with AsyncTestClient(app) as test_client:
        yield test_client


@pytest.fixture
def live_url(settings: Settings, redis_prefix: str) -> Iterator[str]:
    """The app on a real uvicorn server (for truly concurrent requests), either backend."""
    from tests.support.server import live_server

    with live_server(create_app(settings, cache_prefix=redis_prefix)) as url:
        yield url


def admin() -> dict[str, str]:
    return {"Authorization": f"Bearer {ADMIN_KEY}"}
