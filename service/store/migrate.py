"""Apply Alembic migrations programmatically (``gpuplan migrate``, embedded first start, tests)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection
from sqlalchemy.ext.asyncio import AsyncEngine

MIGRATIONS_DIR = Path(__file__).parent / "migrations"


def alembic_config() -> Config:
    """An Alembic config pointing at the packaged migrations (no alembic.ini needed)."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    return config


def _upgrade(connection: Connection, target: str) -> None:
    config = alembic_config()
    config.attributes["connection"] = connection
    command.upgrade(config, target)


async def upgrade(engine: AsyncEngine, target: str = "head") -> None:
    """Upgrade the database behind ``engine`` to ``target`` in one transaction per migration."""
    async with engine.begin() as connection:
        await connection.run_sync(_upgrade, target)


def _current(connection: Connection) -> str | None:
    from alembic.runtime.migration import MigrationContext

    return MigrationContext.configure(connection).get_current_revision()


async def current_revision(engine: AsyncEngine) -> str | None:
    """The Alembic revision the database is at (``None`` when never migrated)."""
    async with engine.connect() as connection:
        return await connection.run_sync(_current)


def head_revision() -> str | None:
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config()).get_current_head()
