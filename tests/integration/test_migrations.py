"""Migrations are code and are tested: empty database -> head, no drift, invariants enforced."""

from __future__ import annotations

import pytest
from alembic.autogenerate import compare_metadata
from alembic.operations import Operations
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Connection, text

from service.store.database import create_engine
from service.store.migrate import current_revision, head_revision, upgrade
from service.store.migrations.backfill import fill_gpu_column
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
            newest_gpu = await connection.scalar(text("SELECT max(revision) FROM gpus"))
            price_revisions = (
                await connection.execute(text("SELECT DISTINCT revision FROM price_points"))
            ).all()
            gpus = await connection.scalar(text("SELECT count(*) FROM gpus"))
            prices = await connection.scalar(text("SELECT count(*) FROM price_points"))
        assert (gpus, prices) == (29, 113)
        # The seed is revision 1; a later migration that fills a new spec field for the bundled
        # GPUs is one more catalog write (backfill.fill_gpu_column).
        assert [r for (r,) in price_revisions] == [1]
        assert revision == newest_gpu >= 1
        await upgrade(engine)  # a second run is a no-op
        assert await current_revision(engine) == head_revision()
    finally:
        await engine.dispose()


async def test_price_points_are_append_only(empty_database_url: str) -> None:
    engine = create_engine(empty_database_url)
    try:
        await upgrade(engine)
        statements = ["UPDATE price_points SET usd = 1", "DELETE FROM price_points"]
        if engine.dialect.name == "postgresql":
            # TRUNCATE fires no row triggers: a statement-level trigger refuses it (0003).
            statements.append("TRUNCATE price_points")
            statements.append("TRUNCATE price_points CASCADE")
        for statement in statements:
            with pytest.raises(Exception, match="append-only"):
                async with engine.begin() as connection:
                    await connection.execute(text(statement))
        async with engine.connect() as connection:
            assert await connection.scalar(text("SELECT count(*) FROM price_points")) == 113
    finally:
        await engine.dispose()


def _fill_tdp(connection: Connection) -> None:
    with Operations.context(MigrationContext.configure(connection)):
        fill_gpu_column("tdp_w")


async def test_a_new_spec_column_is_filled_from_the_bundled_csv(empty_database_url: str) -> None:
    """What a migration adding a GpuSpec field does after ``add_column`` (CONTRIBUTING.md)."""
    engine = create_engine(empty_database_url)
    try:
        await upgrade(engine)
        async with engine.begin() as connection:
            before = await connection.scalar(text("SELECT revision FROM catalog_state"))
            await connection.execute(text("UPDATE gpus SET tdp_w = NULL"))
            await connection.run_sync(_fill_tdp)
        async with engine.connect() as connection:
            after = await connection.scalar(text("SELECT revision FROM catalog_state"))
            h100 = (
                await connection.execute(
                    text("SELECT tdp_w, revision FROM gpus WHERE id = 'h100-sxm'")
                )
            ).one()
            unset = await connection.scalar(text("SELECT count(*) FROM gpus WHERE tdp_w IS NULL"))
        assert after == before + 1
        assert tuple(h100) == (700.0, after)
        assert unset == 0  # every bundled GPU publishes its power
    finally:
        await engine.dispose()
