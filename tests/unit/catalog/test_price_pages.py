"""Price-history pages: the cursor's round trip and refusals, and the query's own checks."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta, timezone

import pytest

from service.domain.catalog import PRICE_PAGE_MAX, PRICE_PAGE_SIZE, PriceQuery
from service.domain.errors import InvalidInput
from service.store.cursor import decode_cursor, encode_cursor


def b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


@pytest.mark.parametrize(
    ("moment", "row_id"),
    [
        (datetime(2026, 6, 3, tzinfo=UTC), 1),
        (datetime(2025, 1, 1, 12, 30, 5, 123456, tzinfo=UTC), 987_654_321),
        (datetime(2026, 1, 1, 9, tzinfo=timezone(timedelta(hours=-5))), 2**62),
    ],
)
def test_a_cursor_decodes_to_what_it_encoded(moment: datetime, row_id: int) -> None:
    cursor = encode_cursor(moment, row_id)
    assert "=" not in cursor and "/" not in cursor and "+" not in cursor  # URL-safe as it is
    assert decode_cursor(cursor) == (moment, row_id)


GOOD = encode_cursor(datetime(2026, 6, 3, tzinfo=UTC), 42)


@pytest.mark.parametrize(
    "cursor",
    [
        "",
        "not base64 at all!",
        GOOD[:-3],  # truncated
        GOOD[:5] + ("A" if GOOD[5] != "A" else "B") + GOOD[6:],  # one character changed
        b64(b"\xff\xfe\xfd"),  # not UTF-8
        b64(b"{}"),
        b64(json.dumps(["2026-06-03T00:00:00", 42]).encode()),  # no zone
        b64(json.dumps(["2026-06-03T00:00:00+00:00", "42"]).encode()),
        b64(json.dumps(["2026-06-03T00:00:00+00:00", True]).encode()),
        b64(json.dumps(["2026-06-03T00:00:00+00:00", 0]).encode()),
        b64(json.dumps(["2026-06-03T00:00:00+00:00", 2**70]).encode()),  # beyond BIGINT
        b64(json.dumps(["yesterday", 42]).encode()),
        b64(json.dumps(["2026-06-03T00:00:00+00:00", 42, 7]).encode()),
    ],
)
def test_a_tampered_or_foreign_cursor_is_invalid_input_on_the_cursor_field(cursor: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        decode_cursor(cursor)
    assert caught.value.field == "cursor"
    assert "cursor" in caught.value.message


def test_a_query_defaults_to_one_page_of_the_newest() -> None:
    query = PriceQuery()
    assert query.limit == PRICE_PAGE_SIZE and query.cursor is None and query.kind is None


@pytest.mark.parametrize("field", ["since", "until"])
def test_a_moment_without_a_zone_is_refused_naming_it(field: str) -> None:
    naive = datetime(2026, 6, 1)  # noqa: DTZ001 - the naive value under test
    with pytest.raises(InvalidInput) as caught:
        PriceQuery(since=naive) if field == "since" else PriceQuery(until=naive)
    assert caught.value.field == field


@pytest.mark.parametrize("limit", [0, -1, PRICE_PAGE_MAX + 1])
def test_a_page_size_outside_the_limits_is_refused(limit: int) -> None:
    with pytest.raises(InvalidInput) as caught:
        PriceQuery(limit=limit)
    assert caught.value.field == "limit"
