"""Use-case level failures that are about the service's dependencies, not the input."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

from sqlalchemy.exc import DBAPIError, IntegrityError, InterfaceError, OperationalError

T = TypeVar("T")


class ServiceUnavailable(Exception):
    """A dependency needed for this request is down; retry later (HTTP 503 + Retry-After)."""

    def __init__(self, why: str, retry_after_s: int = 5) -> None:
        super().__init__(why)
        self.why = why
        self.retry_after_s = retry_after_s


DATABASE_ERRORS: tuple[type[BaseException], ...] = (
    OperationalError,
    InterfaceError,
    DBAPIError,
    ConnectionError,
    OSError,
    TimeoutError,
)


async def with_database(call: Awaitable[T], timeout_s: float, what: str) -> T:
    """Await a repository call; an outage or timeout becomes ``ServiceUnavailable``.

    Integrity errors are ``DBAPIError`` subclasses too, but those that reach here are bugs
    (inputs are validated first), so they are re-raised as they are.
    """
    try:
        return await asyncio.wait_for(call, timeout_s)
    except IntegrityError:
        raise
    except DATABASE_ERRORS as exc:
        raise ServiceUnavailable(f"{what}: the catalog database is unreachable") from exc
