"""A bounded in-process LRU with per-entry TTLs, by entry count and by total size."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

V = TypeVar("V")


class TtlLru(Generic[V]):
    """Values by key, each with a size (bytes, as the caller counts them) and an expiry.

    Bounded by ``max_entries`` and ``max_bytes``: the least recently used entries are evicted
    first; a value larger than ``max_bytes`` is not kept. ``clock`` is seconds (monotonic)."""

    def __init__(
        self,
        *,
        max_entries: int,
        max_bytes: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._entries: OrderedDict[str, tuple[float, V, int]] = OrderedDict()
        self._max_entries = max_entries
        self._max_bytes = max_bytes
        self._bytes = 0
        self._clock = clock

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def size_bytes(self) -> int:
        return self._bytes

    def get(self, key: str) -> V | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        expires, value, _ = entry
        if expires <= self._clock():
            self.drop(key)
            return None
        self._entries.move_to_end(key)
        return value

    def put(self, key: str, value: V, *, size: int, ttl_s: float) -> None:
        if size > self._max_bytes:
            return
        self.drop(key)
        self._entries[key] = (self._clock() + ttl_s, value, size)
        self._bytes += size
        while len(self._entries) > self._max_entries or self._bytes > self._max_bytes:
            self.drop(next(iter(self._entries)))

    def drop(self, key: str) -> None:
        entry = self._entries.pop(key, None)
        if entry is not None:
            self._bytes -= entry[2]

    def clear(self) -> None:
        self._entries.clear()
        self._bytes = 0
