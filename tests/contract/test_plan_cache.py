"""One contract, every PlanCache implementation: the in-process LRU and real Redis."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from service.cache.base import CacheUnavailable, PlanCache
from service.cache.memory import MemoryPlanCache
from service.cache.redis import RedisPlanCache
from tests.support.services import Endpoints, unavailable


@pytest_asyncio.fixture(loop_scope="session", params=("memory", "redis"))
async def cache(
    request: pytest.FixtureRequest, endpoints: Endpoints, redis_prefix: str
) -> AsyncIterator[PlanCache]:
    if request.param == "memory":
        memory = MemoryPlanCache(max_entries=100)
        yield memory
        await memory.close()
        return
    if endpoints.redis_url is None:
        unavailable("Redis", endpoints.why_missing)
    assert endpoints.redis_url is not None
    redis = RedisPlanCache.from_url(endpoints.redis_url, timeout_ms=500, prefix=redis_prefix)
    yield redis
    await redis.close()


async def test_miss_then_hit(cache: PlanCache) -> None:
    assert await cache.get("k1") is None
    await cache.set("k1", b"plan-bytes", ttl_s=60)
    assert await cache.get("k1") == b"plan-bytes"


async def test_overwrite_and_delete(cache: PlanCache) -> None:
    await cache.set("k2", b"a", ttl_s=60)
    await cache.set("k2", b"b", ttl_s=60)
    assert await cache.get("k2") == b"b"
    await cache.delete("k2")
    assert await cache.get("k2") is None
    await cache.delete("never-set")


async def test_entries_expire(cache: PlanCache) -> None:
    await cache.set("k3", b"x", ttl_s=1)
    assert await cache.get("k3") == b"x"
    await asyncio.sleep(1.2)
    assert await cache.get("k3") is None


async def test_binary_values_round_trip(cache: PlanCache) -> None:
    value = bytes(range(256)) * 40
    await cache.set("k4", value, ttl_s=60)
    assert await cache.get("k4") == value


async def test_ping_answers_while_the_backend_is_up(cache: PlanCache) -> None:
    await cache.ping()  # returns nothing; raises CacheUnavailable when the backend is down
    await cache.set("k5", b"after-ping", ttl_s=60)
    assert await cache.get("k5") == b"after-ping"


async def test_ping_of_an_unreachable_redis_is_cache_unavailable() -> None:
    """Readiness relies on this: a cache that does not answer raises the contract's own error,
    never a driver error, and does so within its timeout."""
    down = RedisPlanCache.from_url("redis://127.0.0.1:1/0", timeout_ms=200, prefix="unused:")
    started = time.monotonic()
    try:
        with pytest.raises(CacheUnavailable):
            await down.ping()
    finally:
        await down.close()
    assert time.monotonic() - started < 5


async def test_redis_prefixes_isolate_namespaces(endpoints: Endpoints, redis_prefix: str) -> None:
    if endpoints.redis_url is None:
        unavailable("Redis", endpoints.why_missing)
    assert endpoints.redis_url is not None
    one = RedisPlanCache.from_url(endpoints.redis_url, prefix=redis_prefix + "one:")
    two = RedisPlanCache.from_url(endpoints.redis_url, prefix=redis_prefix + "two:")
    try:
        await one.set("same", b"1", ttl_s=60)
        assert await two.get("same") is None
    finally:
        await one.delete("same")
        await one.close()
        await two.close()


async def test_unreachable_redis_fails_fast_as_cache_unavailable() -> None:
    dead = RedisPlanCache.from_url("redis://127.0.0.1:1/0", timeout_ms=100)
    started = time.perf_counter()
    for call in (dead.get("k"), dead.set("k", b"v", 60), dead.ping()):
        with pytest.raises(CacheUnavailable):
            await call
    assert time.perf_counter() - started < 3
    await dead.close()


async def test_memory_cache_is_bounded_by_entries_and_bytes() -> None:
    cache = MemoryPlanCache(max_entries=3, max_bytes=10_000)
    for i in range(10):
        await cache.set(f"k{i}", b"x" * 100, ttl_s=60)
    assert len(cache) == 3
    assert await cache.get("k0") is None and await cache.get("k9") is not None
    small = MemoryPlanCache(max_entries=100, max_bytes=1_000)
    for i in range(10):
        await small.set(f"k{i}", b"x" * 300, ttl_s=60)
    assert small.size_bytes <= 1_000 and len(small) == 3


async def test_memory_cache_evicts_least_recently_used() -> None:
    cache = MemoryPlanCache(max_entries=2)
    await cache.set("a", b"1", 60)
    await cache.set("b", b"2", 60)
    assert await cache.get("a") == b"1"
    await cache.set("c", b"3", 60)
    assert await cache.get("b") is None and await cache.get("a") == b"1"
