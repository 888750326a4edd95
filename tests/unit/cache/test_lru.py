"""The in-process LRU: bounded by entries and bytes, least recently used out first, TTLs."""

from __future__ import annotations

from service.cache.lru import TtlLru


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_bounded_by_entries_and_bytes_least_recent_first() -> None:
    lru: TtlLru[str] = TtlLru(max_entries=2, max_bytes=100)
    lru.put("a", "A", size=10, ttl_s=60)
    lru.put("b", "B", size=10, ttl_s=60)
    assert lru.get("a") == "A"
    lru.put("c", "C", size=10, ttl_s=60)
    assert lru.get("b") is None and lru.get("a") == "A" and lru.get("c") == "C"
    lru.put("d", "D", size=95, ttl_s=60)
    assert len(lru) == 1 and lru.size_bytes == 95
    lru.put("huge", "H", size=101, ttl_s=60)
    assert lru.get("huge") is None and lru.get("d") == "D"


def test_entries_expire() -> None:
    clock = Clock()
    lru: TtlLru[int] = TtlLru(max_entries=10, max_bytes=1000, clock=clock)
    lru.put("k", 1, size=1, ttl_s=5)
    clock.now += 4.9
    assert lru.get("k") == 1
    clock.now += 0.2
    assert lru.get("k") is None and len(lru) == 0 and lru.size_bytes == 0
