"""The opaque cursor of price-history pages: the sort key of the last row a page returned.

A cursor is URL-safe base64 of ``[observed_at ISO 8601, row id]``; the next page starts just
after that key in ``(observed_at, id)`` descending order. Anything that does not decode to
exactly that shape is refused as ``InvalidInput`` on the ``cursor`` field.
"""

from __future__ import annotations

import base64
import binascii
import json
from datetime import datetime

from service.domain.errors import InvalidInput
from service.domain.moments import window_problem

_MAX_ROW_ID = 2**63  # price_points.id is a BIGINT: anything larger is not a row of ours


def encode_cursor(observed_at: datetime, row_id: int) -> str:
    raw = json.dumps([observed_at.isoformat(), row_id], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, int]:
    """Inverse of ``encode_cursor``; a tampered or foreign cursor is an ``InvalidInput``."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        observed, row_id = json.loads(base64.urlsafe_b64decode(padded.encode()))
        moment = datetime.fromisoformat(observed)
        if window_problem(moment) or type(row_id) is not int or not 0 < row_id < _MAX_ROW_ID:
            raise ValueError("bad cursor")
        return moment, row_id
    except (ValueError, TypeError, binascii.Error):
        raise InvalidInput("cursor is not one this service issued", field="cursor") from None
