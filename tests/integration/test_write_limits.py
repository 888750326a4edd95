"""Admin-write rate limits end to end: failed authentications per client, writes per key,
``X-Forwarded-For`` only from trusted proxies, and one count shared by replicas on one Redis."""

from __future__ import annotations

import secrets
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
from litestar.testing import AsyncTestClient

from service.app import create_app
from service.settings import Settings
from tests.conftest import OTHER_KEY, admin, base_settings
from tests.support.databases import SqliteDatabases
from tests.support.proxy import ToggleProxy

pytestmark = pytest.mark.integration

LIMIT = 4


def observation(i: int) -> dict[str, Any]:
    return {
        "gpu": "l40s",
        "provider": "limitcloud",
        "region": "r1",
        "kind": "on_demand",
        "usd": 0.5 + i / 1000,
        "instance_type": "lc.1x",
        "gpus_per_instance": 1,
        "observed_at": f"2026-09-01T{i % 24:02d}:00:00Z",
    }


def wrong() -> dict[str, str]:
    return {"Authorization": f"Bearer {OTHER_KEY}"}


@pytest_asyncio.fixture(loop_scope="session")
async def sqlite_settings(sqlite_databases: SqliteDatabases, tmp_path: Path) -> Settings:
    return base_settings(
        await sqlite_databases.fresh(), tmp_path, write_rate_limit_per_minute=LIMIT
    )


async def test_a_bad_key_flood_from_one_client_never_locks_out_the_good_key(
    settings: Settings, redis_prefix: str
) -> None:
    app = create_app(
        replace(settings, write_rate_limit_per_minute=LIMIT), cache_prefix=redis_prefix
    )
    async with AsyncTestClient(app) as client:
        body = {"observations": [observation(0)]}
        codes = [
            (await client.post("/v1/prices", json=body, headers=wrong())).status_code
            for _ in range(LIMIT + 3)
        ]
        assert codes == [403] * LIMIT + [429] * 3
        limited = await client.post("/v1/prices", json=body)
        assert limited.status_code == 429
        assert int(limited.headers["retry-after"]) >= 1
        # The same client address with the real key is not refused.
        good = await client.post("/v1/prices", json=body, headers=admin())
        assert good.status_code == 200, good.text


async def test_rotating_forwarded_for_from_an_untrusted_peer_changes_nothing(
    sqlite_settings: Settings,
) -> None:
    app = create_app(sqlite_settings)
    async with AsyncTestClient(app) as client:
        codes = []
        for i in range(LIMIT + 2):
            headers = {**wrong(), "X-Forwarded-For": f"198.51.100.{i}"}
            r = await client.post("/v1/prices", json={"observations": []}, headers=headers)
            codes.append(r.status_code)
        assert codes == [403] * LIMIT + [429] * 2


async def _failed_auth_codes(app: Any, peer: str, forwarded: list[str]) -> list[int]:
    """Failed authentications only (answered by the guard, before any handler), so the app's
    lifespan is not needed; the transport sets the TCP peer address."""
    transport = httpx.ASGITransport(app=app, client=(peer, 40000))
    async with httpx.AsyncClient(transport=transport, base_url="http://gpuplan") as client:
        return [
            (
                await client.post(
                    "/v1/prices",
                    json={"observations": []},
                    headers={**wrong(), "X-Forwarded-For": f},
                )
            ).status_code
            for f in forwarded
        ]


async def test_forwarded_for_is_honoured_only_from_a_configured_proxy(
    sqlite_settings: Settings,
) -> None:
    rotating = [f"198.51.100.{i}" for i in range(LIMIT + 2)]
    # No proxy configured (the default): the peer is the client, the header is ignored.
    app = create_app(sqlite_settings)
    assert await _failed_auth_codes(app, "192.0.2.7", rotating) == [403] * LIMIT + [429] * 2
    # The peer is the configured proxy: each forwarded client has its own count...
    app = create_app(replace(sqlite_settings, trusted_proxies=("192.0.2.7/32",)))
    assert await _failed_auth_codes(app, "192.0.2.7", rotating) == [403] * (LIMIT + 2)
    one_client = ["203.0.113.9"] * (LIMIT + 1)
    assert await _failed_auth_codes(app, "192.0.2.7", one_client) == [403] * LIMIT + [429]
    # ...and a peer that is not the proxy cannot use the header.
    assert await _failed_auth_codes(app, "192.0.2.8", rotating) == [403] * LIMIT + [429] * 2


async def test_two_replicas_on_one_redis_share_the_limits(
    settings: Settings, redis_prefix: str
) -> None:
    if settings.redis_url is None:
        pytest.skip("the shared limit needs Redis (the postgres backend of this fixture)")
    limited = replace(settings, write_rate_limit_per_minute=LIMIT)
    one = create_app(limited, cache_prefix=redis_prefix)
    two = create_app(limited, cache_prefix=redis_prefix)
    async with AsyncTestClient(one) as first, AsyncTestClient(two) as second:
        for i in range(LIMIT):
            client = first if i % 2 == 0 else second
            r = await client.post(
                "/v1/prices", json={"observations": [observation(i)]}, headers=admin()
            )
            assert r.status_code == 200, r.text
        over = await second.post(
            "/v1/prices", json={"observations": [observation(9)]}, headers=admin()
        )
        assert over.status_code == 429
        assert 1 <= int(over.headers["retry-after"]) <= 60
        codes = [
            (await c.post("/v1/prices", json={"observations": []}, headers=wrong())).status_code
            for c in (first, second) * LIMIT
        ]
        assert codes.count(429) == LIMIT and codes[:LIMIT] == [403] * LIMIT


async def test_a_redis_outage_falls_back_to_the_in_process_limit(
    settings: Settings, redis_prefix: str
) -> None:
    if settings.redis_url is None:
        pytest.skip("the fallback needs Redis (the postgres backend of this fixture)")
    proxy = ToggleProxy.for_url(settings.redis_url)
    await proxy.start()
    try:
        app = create_app(
            replace(
                settings, write_rate_limit_per_minute=LIMIT, redis_url=proxy.url(settings.redis_url)
            ),
            cache_prefix=f"{redis_prefix}{secrets.token_hex(2)}:",
        )
        async with AsyncTestClient(app) as client:
            await proxy.cut()
            codes = [
                (
                    await client.post("/v1/prices", json={"observations": []}, headers=wrong())
                ).status_code
                for _ in range(LIMIT + 1)
            ]
            assert codes == [403] * LIMIT + [429]
    finally:
        await proxy.restore()
        await proxy.close()
