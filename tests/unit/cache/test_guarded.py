"""The cache circuit breaker: a failure opens it for the cool-down (calls skip the cache
without touching it); after that the cache is tried again and used once it answers."""

from __future__ import annotations

import pytest

from service.cache.base import CacheUnavailable
from service.cache.guarded import GuardedCache
from service.cache.memory import MemoryPlanCache


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class FlakyCache(MemoryPlanCache):
    """An in-memory cache that fails while ``down`` and counts the calls that reach it."""

    def __init__(self) -> None:
        super().__init__()
        self.down = False
        self.calls = 0

    async def get(self, key: str) -> bytes | None:
        self.calls += 1
        if self.down:
            raise CacheUnavailable("TimeoutError")
        return await super().get(key)

    async def set(self, key: str, value: bytes, ttl_s: int) -> None:
        self.calls += 1
        if self.down:
            raise CacheUnavailable("TimeoutError")
        await super().set(key, value, ttl_s)


async def test_a_failure_opens_the_circuit_for_the_cool_down_then_it_closes() -> None:
    clock = Clock()
    inner = FlakyCache()
    guarded = GuardedCache(inner, cooldown_s=1.0, clock=clock)
    assert await guarded.set("k", b"v", 60) and await guarded.get("k") == b"v"

    inner.down = True
    with pytest.raises(CacheUnavailable):
        await guarded.get("k")
    assert not guarded.available
    calls = inner.calls
    with pytest.raises(CacheUnavailable):
        await guarded.get("k")  # open: answered without calling the cache
    assert await guarded.set("k2", b"v", 60) is False
    assert inner.calls == calls

    inner.down = False
    clock.now += 0.9
    assert not guarded.available
    clock.now += 0.2
    assert guarded.available
    assert await guarded.get("k") == b"v" and inner.calls == calls + 1


async def test_a_failing_write_opens_the_circuit_too() -> None:
    clock = Clock()
    inner = FlakyCache()
    guarded = GuardedCache(inner, cooldown_s=2.0, clock=clock)
    inner.down = True
    assert await guarded.set("k", b"v", 60) is False
    assert not guarded.available
    clock.now += 2.0
    inner.down = False
    assert await guarded.set("k", b"v", 60) is True
