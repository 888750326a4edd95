"""Use-case level failures that are about the service's dependencies, not the input."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

from service.store.errors import DatabaseUnavailable

T = TypeVar("T")


class ServiceUnavailable(Exception):
    """A dependency needed for this request is down; retry later (HTTP 503 + Retry-After)."""

    def __init__(self, why: str, retry_after_s: int = 5) -> None:
        super().__init__(why)
        self.why = why
        self.retry_after_s = retry_after_s


OUTAGES: tuple[type[BaseException], ...] = (DatabaseUnavailable, TimeoutError)
"""What a database call raises when the database is away (the store sorts drivers' errors;
a timeout is the caller's). Nothing else marks the database down."""


def is_outage(exc: BaseException) -> bool:
    return isinstance(exc, OUTAGES)


async def with_database(call: Awaitable[T], timeout_s: float, what: str) -> T:
    """Await a repository call; an outage (``DatabaseUnavailable``, which the store raises for
    a connection failure, or a timeout) becomes ``ServiceUnavailable``. Any other error, a
    refused value (``InvalidInput``) included, passes through."""
    try:
        return await asyncio.wait_for(call, timeout_s)
    except OUTAGES as exc:
        raise ServiceUnavailable(f"{what}: the catalog database is unreachable") from exc


def failure_name(exc: BaseException) -> str:
    """The class name of what went wrong, for logs and readiness reports: the driver's error
    behind a ``DatabaseUnavailable`` (or the one that opened the circuit), else the
    exception's own class."""
    cause = getattr(exc, "cause", None)
    return cause if isinstance(cause, str) else type(exc).__name__
