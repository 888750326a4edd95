"""Fixtures for tests that talk to a database directly (below the HTTP layer)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from sqlalchemy.ext.asyncio import AsyncEngine

from service.store.database import create_engine
from tests.support.databases import PostgresDatabases
from tests.support.services import Endpoints, unavailable


@pytest_asyncio.fixture(loop_scope="session", params=("sqlite", "postgres"))
async def empty_database_url(
    request: pytest.FixtureRequest,
    endpoints: Endpoints,
    postgres_databases: PostgresDatabases | None,
    tmp_path: Path,
) -> str:
    """A database with no schema at all, on either backend."""
    if request.param == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path / 'empty.db'}"
    if postgres_databases is None:
        unavailable("Postgres", endpoints.why_missing)
    assert postgres_databases is not None
    return await postgres_databases.empty()


@pytest_asyncio.fixture(loop_scope="session")
async def engine(settings: object) -> AsyncIterator[AsyncEngine]:
    """An engine on a fresh, migrated, seeded database (either backend)."""
    from service.settings import Settings

    assert isinstance(settings, Settings)
    eng = create_engine(settings.database_url)
    try:
        yield eng
    finally:
        await eng.dispose()
