"""Helpers shared by the ``gpuplan`` commands: run a coroutine, fail with one line, open the
configured catalog database."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, NoReturn, TypeVar

import click

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

    from service.settings import Settings
    from service.store.repositories import CatalogRepository

T = TypeVar("T")


def run(coro: Awaitable[T]) -> T:
    """Run ``coro`` to completion on a fresh event loop."""

    async def main() -> T:
        return await coro

    return asyncio.run(main())


def fail(message: str, code: int = 1) -> NoReturn:
    """Print ``gpuplan: <message>`` on stderr and exit with ``code`` (no traceback)."""
    click.echo(f"gpuplan: {message}", err=True)
    sys.exit(code)


def error_text(exc: BaseException) -> str:
    """One line for an error: a domain error's message and field; for a database error the
    driver's first line (never the SQL statement or its parameters); else the exception type
    and message."""
    from sqlalchemy.exc import StatementError

    from service.domain.errors import DomainError

    if isinstance(exc, DomainError):
        return exc.message + (f" ({exc.field})" if exc.field else "")
    if isinstance(exc, StatementError):
        driver = exc.orig if exc.orig is not None else exc
        first = (str(driver).strip().splitlines() or [""])[0]
        return f"the database refused the statement: {type(driver).__name__}: {first}"
    return f"{type(exc).__name__}: {exc}"


@asynccontextmanager
async def open_repository(settings: Settings) -> AsyncIterator[CatalogRepository]:
    """A repository on the configured database (an embedded SQLite file is migrated first);
    the engine is disposed on exit."""

    from service.store.repositories import CatalogRepository

    async with open_engine(settings) as engine:
        yield CatalogRepository(engine)


@asynccontextmanager
async def open_engine(settings: Settings) -> AsyncIterator[AsyncEngine]:
    """The configured database (an embedded SQLite file is migrated first); disposed on
    exit."""
    from service.store.database import create_engine
    from service.store.migrate import upgrade

    engine = create_engine(settings.database_url, timeout_s=settings.database_timeout_s)
    try:
        if settings.database_backend == "sqlite":
            await upgrade(engine)
        yield engine
    finally:
        await engine.dispose()
