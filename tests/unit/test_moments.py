"""Every date-time from outside must carry a zone and lie in the documented window, checked
before it is converted to UTC (which overflows at the ends of Python's range)."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta, timezone

import pytest

from service.domain.errors import InvalidInput
from service.domain.moments import EARLIEST, LATEST, to_utc
from service.store.csv_format import parse_timestamp
from service.store.cursor import decode_cursor, encode_cursor

FAR_WEST = timezone(timedelta(hours=-23, minutes=-59))
FAR_EAST = timezone(timedelta(hours=23, minutes=59))


@pytest.mark.parametrize(
    "moment",
    [
        datetime(9999, 12, 31, 23, 59, 59, tzinfo=FAR_WEST),  # past datetime.max once in UTC
        datetime(1, 1, 1, tzinfo=FAR_EAST),  # before datetime.min once in UTC
        datetime(2100, 1, 1, 0, 0, 1, tzinfo=UTC),
        datetime(1969, 12, 31, 23, 59, 59, tzinfo=UTC),
        datetime(2099, 12, 31, 20, tzinfo=timezone(timedelta(hours=-5))),  # 2100-01-01T01Z
    ],
)
def test_moments_outside_the_window_name_the_field(moment: datetime) -> None:
    with pytest.raises(InvalidInput) as caught:
        to_utc(moment, "as_of")
    assert caught.value.field == "as_of"
    assert "1970-01-01T00:00:00Z" in caught.value.message


def test_the_window_ends_are_inside_and_the_answer_is_utc() -> None:
    assert to_utc(EARLIEST, "x") == EARLIEST
    assert to_utc(LATEST, "x") == LATEST
    east = datetime(2026, 6, 1, 3, tzinfo=timezone(timedelta(hours=3)))
    assert to_utc(east, "x") == datetime(2026, 6, 1, tzinfo=UTC)
    assert to_utc(east, "x").tzinfo is UTC


def test_a_moment_without_a_zone_is_refused() -> None:
    with pytest.raises(InvalidInput, match="zone"):
        to_utc(datetime(2026, 6, 1), "since")  # noqa: DTZ001 - the naive moment under test


@pytest.mark.parametrize("cell", ["9999-12-31T23:59:59-23:59", "1900-01-01", "2026-06-01T00:00"])
def test_csv_timestamps_outside_the_window_or_without_zone_are_value_errors(cell: str) -> None:
    with pytest.raises(ValueError, match="timestamp"):
        parse_timestamp(cell)


def test_a_forged_cursor_beyond_the_window_is_not_ours() -> None:
    forged = base64.urlsafe_b64encode(
        json.dumps(["9999-12-31T23:59:59-23:59", 5]).encode()
    ).decode()
    with pytest.raises(InvalidInput) as caught:
        decode_cursor(forged)
    assert caught.value.field == "cursor"
    issued = encode_cursor(datetime(2026, 6, 1, tzinfo=UTC), 5)
    assert decode_cursor(issued) == (datetime(2026, 6, 1, tzinfo=UTC), 5)
