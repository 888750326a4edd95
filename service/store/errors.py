"""Which database failures mean "the database is away", decided here so that no layer above
``store`` needs to know a driver's or SQLAlchemy's exception classes.

Every public coroutine of the repository runs under ``outage_as_unavailable``, which sorts a
failure into one of three kinds:

- **an outage** (``is_outage``): the connection was refused, dropped, timed out or the server
  is shutting down or out of resources: ``DatabaseUnavailable`` (503, the catalog turns
  stale). Only these count against the database's health;
- **a value the database refused** (``is_refused_value``): a data exception (SQLSTATE class
  22: a string too long, NUL in text, a number out of range) or a value the driver could not
  bind: ``ValueRefused``, an ``InvalidInput`` (422). Inputs are validated before they reach a
  query, so one that fires here is a missing check, but it is the caller's value, not an
  outage;
- anything else (an integrity violation, a syntax or permission error): re-raised as it is.
  Those are bugs or a misconfigured deployment, answered 500 and logged.

The original exception is the ``__cause__`` of what is raised.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

from sqlalchemy.exc import (
    DataError,
    DBAPIError,
    IntegrityError,
    InterfaceError,
    OperationalError,
    StatementError,
)

from service.domain.errors import InvalidInput

P = ParamSpec("P")
R = TypeVar("R")

CONNECTION_FAILURES: tuple[type[BaseException], ...] = (ConnectionError, OSError, TimeoutError)
"""Raised by drivers (or asyncio) as they are, outside SQLAlchemy's wrappers."""
OUTAGE_SQLSTATE_CLASSES = frozenset({"08", "53", "57", "58"})
"""Connection exception, insufficient resources, operator intervention (shutdown, cannot
connect now), system error: https://www.postgresql.org/docs/current/errcodes-appendix.html"""
VALUE_SQLSTATE_CLASS = "22"
"""Data exception: the statement was fine, a value in it was not."""


class DatabaseUnavailable(Exception):
    """The database did not answer. ``cause`` names the underlying error's class."""

    def __init__(self, cause: BaseException) -> None:
        self.cause = type(cause).__name__
        super().__init__(f"the catalog database is unreachable ({self.cause})")


class ValueRefused(InvalidInput):
    """The database refused a value of the request (a check the edge is missing)."""

    def __init__(self, cause: BaseException) -> None:
        state = sqlstate(cause)
        why = f"SQLSTATE {state}" if state else type(_driver_error(cause)).__name__
        super().__init__(
            f"the catalog database refused a value of this request ({why})", field="body"
        )


def _driver_error(exc: BaseException) -> BaseException:
    """The driver's own exception behind a SQLAlchemy wrapper (the wrapper when none)."""
    orig = getattr(exc, "orig", None)
    return orig if isinstance(orig, BaseException) else exc


def sqlstate(exc: BaseException) -> str | None:
    """The five-character SQLSTATE a Postgres driver attached to ``exc``, if any."""
    orig = _driver_error(exc)
    for name in ("sqlstate", "pgcode"):
        value = getattr(orig, name, None)
        if isinstance(value, str) and len(value) == 5:
            return value
    return None


def _caused_by_connection(exc: BaseException) -> bool:
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, CONNECTION_FAILURES):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def is_outage(exc: BaseException) -> bool:
    """Whether ``exc`` means the database cannot be reached or cannot serve (not a bad value
    or a bad statement)."""
    if isinstance(exc, DBAPIError):
        if exc.connection_invalidated or isinstance(exc, OperationalError | InterfaceError):
            return True
        state = sqlstate(exc)
        if state is not None:
            return state[:2] in OUTAGE_SQLSTATE_CLASSES
        return _caused_by_connection(exc)
    if isinstance(exc, StatementError):
        return False
    return isinstance(exc, CONNECTION_FAILURES)


def is_refused_value(exc: BaseException) -> bool:
    """Whether ``exc`` is the database (or its driver) refusing a value in a statement."""
    if isinstance(exc, IntegrityError) or is_outage(exc):
        return False
    if isinstance(exc, DataError):
        return True
    if isinstance(exc, DBAPIError):
        state = sqlstate(exc)
        return state is not None and state[:2] == VALUE_SQLSTATE_CLASS
    # Not from the driver: a bound value a column type could not convert.
    return isinstance(exc, StatementError)


_SORTED: tuple[type[BaseException], ...] = (StatementError, *CONNECTION_FAILURES)


def outage_as_unavailable(
    method: Callable[P, Coroutine[Any, Any, R]],
) -> Callable[P, Coroutine[Any, Any, R]]:
    """Decorate a repository coroutine: an outage surfaces as ``DatabaseUnavailable``, a
    refused value as ``ValueRefused``; anything else as it was raised."""

    @functools.wraps(method)
    async def guarded(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await method(*args, **kwargs)
        except _SORTED as exc:
            if is_outage(exc):
                raise DatabaseUnavailable(exc) from exc
            if is_refused_value(exc):
                raise ValueRefused(exc) from exc
            raise

    return guarded
