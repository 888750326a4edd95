"""The window every date-time given to the service must fall in.

A moment from outside (``as_of``, ``observed_at``, ``since``/``until``, a CSV cell) needs a
zone and must lie between ``EARLIEST`` and ``LATEST`` once moved to UTC. Checked before the
conversion, which overflows at the ends of Python's range (``9999-12-31T23:59:59-23:59``), and
before any database sees the value, so both backends refuse the same moments.
"""

from __future__ import annotations

from datetime import UTC, datetime

from service.domain.errors import InvalidInput

EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
LATEST = datetime(2100, 1, 1, tzinfo=UTC)
WINDOW = "between 1970-01-01T00:00:00Z and 2100-01-01T00:00:00Z"


def window_problem(value: datetime) -> str | None:
    """Why ``value`` is refused (no zone, or outside the window), or ``None``."""
    if value.tzinfo is None or value.utcoffset() is None:
        return "needs a zone, e.g. 2026-06-01T00:00:00Z"
    if not EARLIEST <= value <= LATEST:  # aware comparisons never overflow
        return f"must be {WINDOW}"
    return None


def to_utc(value: datetime, field: str) -> datetime:
    """``value`` in UTC; ``InvalidInput`` naming ``field`` when ``window_problem`` finds one."""
    problem = window_problem(value)
    if problem is not None:
        raise InvalidInput(f"{field} {problem}", field=field)
    return value.astimezone(UTC)
