"""Which database failures mean "the database is away", decided here so that no layer above
``store`` needs to know a driver's or SQLAlchemy's exception classes.

Every public coroutine of the repository runs under ``outage_as_unavailable``: a connection
refused, dropped or timed out becomes ``DatabaseUnavailable`` (the original is its
``__cause__``). Integrity errors are re-raised as they are: inputs are validated before they
reach a write, so one that fires is a bug, not an outage.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

from sqlalchemy.exc import DBAPIError, IntegrityError, InterfaceError, OperationalError

P = ParamSpec("P")
R = TypeVar("R")

OUTAGES: tuple[type[BaseException], ...] = (
    OperationalError,
    InterfaceError,
    DBAPIError,
    ConnectionError,
    OSError,
    TimeoutError,
)


class DatabaseUnavailable(Exception):
    """The database did not answer. ``cause`` names the underlying error's class."""

    def __init__(self, cause: BaseException) -> None:
        self.cause = type(cause).__name__
        super().__init__(f"the catalog database is unreachable ({self.cause})")


def outage_as_unavailable(
    method: Callable[P, Coroutine[Any, Any, R]],
) -> Callable[P, Coroutine[Any, Any, R]]:
    """Decorate a repository coroutine so that an outage surfaces as ``DatabaseUnavailable``."""

    @functools.wraps(method)
    async def guarded(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await method(*args, **kwargs)
        except IntegrityError:
            raise
        except OUTAGES as exc:
            raise DatabaseUnavailable(exc) from exc

    return guarded
