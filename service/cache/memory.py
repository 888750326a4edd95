"""In-process plan cache: an LRU bounded by entry count and total bytes, with TTLs."""

from __future__ import annotations

import time
from collections.abc import Callable

from service.cache.lru import TtlLru


class MemoryPlanCache:
    """Used when no Redis is configured. Bounded, so 10,000 distinct plans cannot grow the
    process without limit: the least recently used entries are evicted first."""

    backend = "memory"

    def __init__(
        self,
        *,
        max_entries: int = 2_000,
        max_bytes: int = 64 * 1024 * 1024,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._lru: TtlLru[bytes] = TtlLru(max_entries=max_entries, max_bytes=max_bytes, clock=clock)

    def __len__(self) -> int:
        return len(self._lru)

    @property
    def size_bytes(self) -> int:
        return self._lru.size_bytes

    async def get(self, key: str) -> bytes | None:
        return self._lru.get(key)

    async def set(self, key: str, value: bytes, ttl_s: int) -> None:
        self._lru.put(key, value, size=len(value), ttl_s=ttl_s)

    async def delete(self, key: str) -> None:
        self._lru.drop(key)

    async def ping(self) -> None:
        return None

    async def close(self) -> None:
        self._lru.clear()
