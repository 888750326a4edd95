"""The plan-cache contract shared by the Redis and in-memory implementations."""

from __future__ import annotations

from typing import Protocol, runtime_checkable


class CacheUnavailable(Exception):
    """The cache backend did not answer in time or refused; callers bypass the cache."""


@runtime_checkable
class PlanCache(Protocol):
    """Bytes by key with a TTL. Implementations raise ``CacheUnavailable`` on backend trouble,
    never a driver-specific error, so callers can bypass the cache with one ``except``."""

    backend: str

    async def get(self, key: str) -> bytes | None: ...

    async def set(self, key: str, value: bytes, ttl_s: int) -> None: ...

    async def delete(self, key: str) -> None: ...

    async def ping(self) -> None: ...

    async def close(self) -> None: ...
