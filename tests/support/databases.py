"""Fresh, migrated databases per test, cloned from a template made once per run."""

from __future__ import annotations

import asyncio
import itertools
import shutil
from pathlib import Path

import asyncpg
from sqlalchemy.engine.url import make_url

from service.store.database import create_engine
from service.store.migrate import upgrade
from tests.support.services import RUN_ID

DROP_CONNECTIONS = 8
"""Connections that drop a run's databases at once (see :meth:`PostgresDatabases.drop_all`)."""


def _asyncpg_dsn(url: str, database: str | None = None) -> str:
    parsed = make_url(url).set(drivername="postgresql")
    if database is not None:
        parsed = parsed.set(database=database)
    return parsed.render_as_string(hide_password=False)


class PostgresDatabases:
    """``CREATE DATABASE ... TEMPLATE`` clones of one migrated template (fast: no re-migration)."""

    def __init__(self, admin_url: str) -> None:
        self._admin_url = admin_url
        self._template = f"gpuplan_t_{RUN_ID}_tmpl"
        self._made: list[str] = []
        self._counter = itertools.count()

    def url(self, database: str) -> str:
        return (
            make_url(self._admin_url).set(database=database).render_as_string(hide_password=False)
        )

    async def _admin(self) -> asyncpg.Connection:
        return await asyncpg.connect(_asyncpg_dsn(self._admin_url), timeout=5)

    async def prepare(self) -> None:
        conn = await self._admin()
        try:
            await conn.execute(f'DROP DATABASE IF EXISTS "{self._template}"')
            await conn.execute(f'CREATE DATABASE "{self._template}"')
        finally:
            await conn.close()
        self._made.append(self._template)
        engine = create_engine(self.url(self._template))
        try:
            await upgrade(engine)
        finally:
            await engine.dispose()

    async def empty(self) -> str:
        """A new database with no schema at all (for migration tests)."""
        name = f"gpuplan_t_{RUN_ID}_{next(self._counter)}"
        conn = await self._admin()
        try:
            await conn.execute(f'CREATE DATABASE "{name}"')
        finally:
            await conn.close()
        self._made.append(name)
        return self.url(name)

    async def fresh(self) -> str:
        name = f"gpuplan_t_{RUN_ID}_{next(self._counter)}"
        conn = await self._admin()
        try:
            await conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{self._template}"')
        finally:
            await conn.close()
        self._made.append(name)
        return self.url(name)

    async def drop_all(self) -> None:
        """Drop every database this run made, over :data:`DROP_CONNECTIONS` connections at
        once: each ``DROP DATABASE`` waits for a checkpoint, and concurrent drops share one,
        so a run's few hundred databases go in a fraction of the time one by one takes."""
        names = list(reversed(self._made))

        async def drop(share: list[str]) -> None:
            conn = await self._admin()
            try:
                for name in share:
                    await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            finally:
                await conn.close()

        await asyncio.gather(*(drop(names[i::DROP_CONNECTIONS]) for i in range(DROP_CONNECTIONS)))


class SqliteDatabases:
    """Copies of one migrated SQLite file."""

    def __init__(self, directory: Path) -> None:
        self._dir = directory
        self._template = directory / "template.db"
        self._counter = itertools.count()

    async def prepare(self) -> None:
        engine = create_engine(f"sqlite+aiosqlite:///{self._template}")
        try:
            await upgrade(engine)
        finally:
            await engine.dispose()

    async def fresh(self) -> str:
        target = self._dir / f"db{next(self._counter)}.db"
        shutil.copyfile(self._template, target)
        return f"sqlite+aiosqlite:///{target}"
