"""In-process plan cache: an LRU bounded by entry count and total bytes, with TTLs."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable


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
        self._entries: OrderedDict[str, tuple[float, bytes]] = OrderedDict()
        self._max_entries = max_entries
        self._max_bytes = max_bytes
        self._bytes = 0
        self._clock = clock

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def size_bytes(self) -> int:
        return self._bytes

    async def get(self, key: str) -> bytes | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        expires, value = entry
        if expires <= self._clock():
            self._drop(key)
            return None
        self._entries.move_to_end(key)
        return value

    async def set(self, key: str, value: bytes, ttl_s: int) -> None:
        if len(value) > self._max_bytes:
            return
        self._drop(key)
        self._entries[key] = (self._clock() + ttl_s, value)
        self._bytes += len(value)
        while len(self._entries) > self._max_entries or self._bytes > self._max_bytes:
            oldest = next(iter(self._entries))
            self._drop(oldest)

    async def delete(self, key: str) -> None:
        self._drop(key)

    async def ping(self) -> None:
        return None

    async def close(self) -> None:
        self._entries.clear()
        self._bytes = 0

    def _drop(self, key: str) -> None:
        entry = self._entries.pop(key, None)
        if entry is not None:
            self._bytes -= len(entry[1])
