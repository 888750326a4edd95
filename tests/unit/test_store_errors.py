"""Which database failures are outages (503, the catalog turns stale), which are values the
database refused (422), and which are neither (a bug: raised as they are)."""

from __future__ import annotations

import sqlite3

import pytest
from sqlalchemy.exc import (
    DataError,
    DBAPIError,
    IntegrityError,
    InterfaceError,
    OperationalError,
    ProgrammingError,
    StatementError,
)

from service.domain.errors import InvalidInput
from service.store.errors import (
    DatabaseUnavailable,
    ValueRefused,
    is_outage,
    is_refused_value,
    outage_as_unavailable,
)


class DriverError(Exception):
    """A driver exception carrying a SQLSTATE, as asyncpg's do."""

    def __init__(self, sqlstate: str | None = None) -> None:
        super().__init__(sqlstate or "driver error")
        self.sqlstate = sqlstate


def wrapped(cls: type[DBAPIError], state: str | None, *, invalidated: bool = False) -> DBAPIError:
    return cls("SELECT 1", {}, DriverError(state), connection_invalidated=invalidated)


def with_cause(exc: BaseException, cause: BaseException) -> BaseException:
    exc.__cause__ = cause
    return exc


OUTAGES = {
    "refused": ConnectionRefusedError("refused"),
    "timeout": TimeoutError(),
    "reset": ConnectionResetError(),
    "operational": wrapped(OperationalError, None),
    "interface": wrapped(InterfaceError, None),
    "dropped mid-query": wrapped(DBAPIError, None, invalidated=True),
    "connection failure 08006": wrapped(DBAPIError, "08006"),
    "admin shutdown 57P01": wrapped(DBAPIError, "57P01"),
    "too many connections 53300": wrapped(DBAPIError, "53300"),
    "unknown, caused by a socket error": with_cause(wrapped(DBAPIError, None), OSError("eof")),
    "sqlite locked": OperationalError("x", {}, sqlite3.OperationalError("database is locked")),
}
VALUES = {
    "NUL in text 22021": wrapped(DBAPIError, "22021"),
    "string too long 22001": wrapped(DBAPIError, "22001"),
    "numeric out of range 22003": wrapped(DBAPIError, "22003"),
    "data error": wrapped(DataError, None),
    "unbindable value": StatementError("date value out of range", "SELECT", {}, OverflowError()),
}
NEITHER = {
    "integrity": wrapped(IntegrityError, "23514"),
    "syntax 42601": wrapped(ProgrammingError, "42601"),
    "permission 42501": wrapped(ProgrammingError, "42501"),
    "plain bug": RuntimeError("bug"),
}


@pytest.mark.parametrize("exc", OUTAGES.values(), ids=OUTAGES.keys())
def test_outages(exc: BaseException) -> None:
    assert is_outage(exc) and not is_refused_value(exc)


@pytest.mark.parametrize("exc", VALUES.values(), ids=VALUES.keys())
def test_refused_values_are_not_outages(exc: BaseException) -> None:
    assert is_refused_value(exc) and not is_outage(exc)


@pytest.mark.parametrize("exc", NEITHER.values(), ids=NEITHER.keys())
def test_bugs_are_neither(exc: BaseException) -> None:
    assert not is_outage(exc) and not is_refused_value(exc)


async def raise_it(exc: BaseException) -> None:
    raise exc


@pytest.mark.parametrize(
    ("exc", "raised"),
    [
        (OUTAGES["dropped mid-query"], DatabaseUnavailable),
        (OUTAGES["refused"], DatabaseUnavailable),
        (VALUES["NUL in text 22021"], ValueRefused),
        (VALUES["unbindable value"], ValueRefused),
        (NEITHER["integrity"], IntegrityError),
        (NEITHER["plain bug"], RuntimeError),
    ],
)
async def test_the_repository_guard_sorts_each_kind(
    exc: BaseException, raised: type[BaseException]
) -> None:
    with pytest.raises(raised) as caught:
        await outage_as_unavailable(raise_it)(exc)
    if raised is ValueRefused:
        assert isinstance(caught.value, InvalidInput) and caught.value.field == "body"
        assert "SELECT" not in caught.value.message


def test_the_cli_line_for_a_database_error_names_no_statement() -> None:
    from service.cli_common import error_text

    exc = IntegrityError(
        "INSERT INTO price_points (usd) VALUES (?)",
        (-1.5,),
        sqlite3.IntegrityError("CHECK constraint failed: ck_price_points_usd_positive"),
    )
    line = error_text(exc)
    assert "CHECK constraint failed" in line
    assert "INSERT" not in line and "-1.5" not in line and "\n" not in line
