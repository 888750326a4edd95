"""A plan's answer says how old its prices are today, beside the plan and not in it: headers
on every rendering, a warning over the text table when they are beyond the limit, and the
same plan (id and JSON bytes) whatever the date."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from litestar.testing import AsyncTestClient

from service.app import create_app
from tests.conftest import base_settings
from tests.support.bodies import SMALL_PLAN
from tests.support.databases import SqliteDatabases
from tests.support.plan_text import plan_table

pytestmark = pytest.mark.integration

PLAN = SMALL_PLAN


async def answers_on(
    today: datetime, database_url: str, tmp: Path, max_age_days: int | None = 180
) -> dict[str, tuple[dict[str, str], bytes]]:
    settings = replace(base_settings(database_url, tmp), price_max_age_days=max_age_days)
    app = create_app(settings, clock=lambda: today)
    out = {}
    async with AsyncTestClient(app) as client:
        for fmt in ("json", "text"):
            got = await client.post(f"/v1/plans?format={fmt}", json=PLAN)
            assert got.status_code == 200, got.text
            out[fmt] = (dict(got.headers), got.content)
        plan_id = out["json"][0]["etag"].strip('"')
        stored = await client.get(f"/v1/plans/{plan_id}?format=text")
        out["stored"] = (dict(stored.headers), stored.content)
    return out


async def test_price_age_headers_and_text_warning_move_with_the_date_the_plan_does_not(
    sqlite_databases: SqliteDatabases, tmp_path: Path
) -> None:
    url = await sqlite_databases.fresh()
    probe = await answers_on(datetime(2026, 1, 1, tzinfo=UTC), url, tmp_path)
    oldest = datetime.fromisoformat(json.loads(probe["json"][1])["oldest_price_observed_at"])
    fresh = await answers_on(oldest + timedelta(days=10), url, tmp_path)
    old = await answers_on(oldest + timedelta(days=400), url, tmp_path)

    headers = fresh["json"][0]
    assert headers["x-prices-age-days"] == "10" and "x-prices-stale" not in headers
    assert not fresh["text"][1].startswith(b"WARNING")

    for fmt in ("json", "text", "stored"):
        headers, _ = old[fmt]
        assert headers["x-prices-age-days"] == "400" and headers["x-prices-stale"] == "true"
    for fmt in ("text", "stored"):
        first = old[fmt][1].decode().splitlines()[0]
        assert first.startswith("WARNING: this fleet is costed at prices observed up to 400 days")
        assert "limit 180 days" in first
    # The plan itself does not move with the clock: same id, same JSON bytes, same table.
    assert old["json"][0]["etag"] == fresh["json"][0]["etag"]
    assert old["json"][1] == fresh["json"][1]
    assert plan_table(old["text"][1].decode()) == fresh["text"][1].decode()


async def test_no_limit_gives_the_age_without_a_warning(
    sqlite_databases: SqliteDatabases, tmp_path: Path
) -> None:
    got = await answers_on(datetime(2040, 1, 1, tzinfo=UTC), await sqlite_databases.fresh(),
                           tmp_path, max_age_days=None)  # fmt: skip
    headers, body = got["text"]
    assert int(headers["x-prices-age-days"]) > 3000 and "x-prices-stale" not in headers
    assert not body.startswith(b"WARNING")
