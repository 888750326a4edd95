"""Redis plan cache. Every call has a short timeout; any failure is ``CacheUnavailable``."""

from __future__ import annotations

from redis.asyncio import Redis
from redis.exceptions import RedisError

from service.cache.base import CacheUnavailable


class RedisPlanCache:
    backend = "redis"

    def __init__(self, client: Redis, *, prefix: str = "gpuplan:") -> None:
        self._client = client
        self._prefix = prefix

    @classmethod
    def from_url(
        cls, url: str, *, timeout_ms: int = 100, prefix: str = "gpuplan:"
    ) -> RedisPlanCache:
        """A client whose connect and socket timeouts are ``timeout_ms``, so a slow or stopped
        Redis costs a request at most that long before the cache is bypassed."""
        seconds = timeout_ms / 1000
        client = Redis.from_url(
            url,
            socket_timeout=seconds,
            socket_connect_timeout=seconds,
            retry_on_timeout=False,
            health_check_interval=30,
            max_connections=64,
        )
        return cls(client, prefix=prefix)

    @property
    def prefix(self) -> str:
        return self._prefix

    async def get(self, key: str) -> bytes | None:
        try:
            value = await self._client.get(self._prefix + key)
        except (RedisError, OSError, TimeoutError) as exc:
            raise CacheUnavailable(type(exc).__name__) from exc
        if value is None or isinstance(value, bytes):
            return value
        return str(value).encode()

    async def set(self, key: str, value: bytes, ttl_s: int) -> None:
        try:
            await self._client.set(self._prefix + key, value, ex=ttl_s)
        except (RedisError, OSError, TimeoutError) as exc:
            raise CacheUnavailable(type(exc).__name__) from exc

    async def delete(self, key: str) -> None:
        try:
            await self._client.delete(self._prefix + key)
        except (RedisError, OSError, TimeoutError) as exc:
            raise CacheUnavailable(type(exc).__name__) from exc

    async def ping(self) -> None:
        try:
            await self._client.ping()
        except (RedisError, OSError, TimeoutError) as exc:
            raise CacheUnavailable(type(exc).__name__) from exc

    async def close(self) -> None:
        await self._client.aclose()
