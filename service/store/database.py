"""Async engine construction for Postgres (asyncpg) and the embedded SQLite default."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine.url import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine


def sqlite_path(url: str) -> Path | None:
    """The file behind a ``sqlite+aiosqlite:///`` URL (``None`` for in-memory or other URLs)."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or not parsed.database:
        return None
    if parsed.database == ":memory:":
        return None
    return Path(parsed.database)


def create_engine(url: str, *, timeout_s: float = 2.0, pool_size: int = 10) -> AsyncEngine:
    """An engine with sane pool and timeout settings for either backend.

    SQLite gets WAL journaling (readers never block the writer), enforced foreign keys and a
    busy timeout; its parent directory is created when missing. Postgres gets a bounded pool,
    pre-ping (so a restarted server is noticed instead of failing one request) and a connect
    timeout, so an outage answers quickly instead of hanging requests.
    """
    backend = make_url(url).get_backend_name()
    if backend == "sqlite":
        path = sqlite_path(url)
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
        engine = create_async_engine(url, connect_args={"timeout": max(timeout_s, 5.0)})

        @event.listens_for(engine.sync_engine, "connect")
        def _pragmas(dbapi_connection: Any, _record: Any) -> None:
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.close()

        return engine
    return create_async_engine(
        url,
        pool_size=pool_size,
        max_overflow=pool_size,
        pool_pre_ping=True,
        pool_timeout=timeout_s,
        pool_recycle=1800,
        connect_args={"timeout": timeout_s, "command_timeout": max(timeout_s * 5, 10.0)},
    )
