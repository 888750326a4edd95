"""Migrations are code and are tested: empty database -> head, no drift, invariants enforced."""

from __future__ import annotations

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Connection, text

from service.store.database import create_engine
from service.store.migrate import current_revision, head_revision, upgrade
from service.store.models import Base

pytestmark = pytest.mark.integration


def _drift(connection: Connection) -> list[object]:
    context = MigrationContext.configure(connection, opts={"compare_type": True})
    return list(compare_metadata(context, Base.metadata))


async def test_upgrade_empty_database_to_head_without_drift(empty_database_url: str) -> None:
    engine = create_engine(empty_database_url)
    try:
        assert await current_revision(engine) is None
        await upgrade(engine)
        assert await current_revision(engine) == head_revision()
        async with engine.connect() as connection:
            assert await connection.run_sync(_drift) == []
            revision = await connection.scalar(text("SELECT revision FROM catalog_state"))
            gpus = await connection.scalar(text("SELECT count(*) FROM gpus"))
            prices = await connection.scalar(text("SELECT count(*) FROM price_points"))
        assert (revision, gpus, prices) == (1, 29, 113)
        await upgrade(engine)  # a second run is a no-op
        assert await current_revision(engine) == head_revision()
    finally:
        await engine.dispose()


async def test_price_points_are_append_only(empty_database_url: str) -> None:
    engine = create_engine(empty_database_url)
    try:
        await upgrade(engine)
        for statement in ("UPDATE price_points SET usd = 1", "DELETE FROM price_points"):
            with pytest.raises(Exception, match="append-only"):
                async with engine.begin() as connection:
                    await connection.execute(text(statement))
        async with engine.connect() as connection:
            assert await connection.scalar(text("SELECT count(*) FROM price_points")) == 113
    finally:
        await engine.dispose()
