"""Rate-limit counters: a sliding window in this process, or a fixed window shared through Redis.

Both answer ``hit(key)``: ``None`` when the event is within the limit (and counted), else the
seconds until one is allowed again. The Redis counter is one ``INCR`` plus a ``PEXPIRE`` on the
window's first event (one Lua script, so the two cannot be separated by a crash), keyed by
``{prefix}ratelimit:{key}``: every replica on the same Redis shares the count. When Redis fails
(down, slow past its timeout) the call falls back to an in-process window, never to "no limit"
and never to an error.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable

from redis.asyncio import Redis

WINDOW_S = 60.0
_IDLE_SWEEP_AT = 10_000  # keys held before idle ones are dropped

log = logging.getLogger("gpuplan.ratelimit")

# KEYS[1]: the counter; ARGV[1]: the window in ms. Returns {count, ms left in the window}.
_HIT = """
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]); ttl = tonumber(ARGV[1]) end
return {n, ttl}
"""


class WindowLimiter:
    """At most ``per_minute`` events per key in any 60-second window, in this process."""

    def __init__(self, per_minute: int, clock: Callable[[], float] = time.monotonic) -> None:
        self._limit = per_minute
        self._clock = clock
        self._events: dict[str, deque[float]] = {}

    def admit(self, key: str) -> float | None:
        """Record an event for ``key`` and return ``None``, or refuse it and return the seconds
        until one is allowed again."""
        now = self._clock()
        events = self._events.setdefault(key, deque())
        while events and events[0] <= now - WINDOW_S:
            events.popleft()
        if len(events) >= self._limit:
            return events[0] + WINDOW_S - now
        events.append(now)
        if len(self._events) > _IDLE_SWEEP_AT:  # drop idle keys so the table stays small
            for idle in [k for k, v in self._events.items() if not v or v[-1] <= now - WINDOW_S]:
                del self._events[idle]
        return None

    async def hit(self, key: str) -> float | None:
        return self.admit(key)

    async def close(self) -> None:
        return None


class RedisWindowLimiter:
    """At most ``per_minute`` events per key per 60-second fixed window, shared through Redis;
    an in-process ``WindowLimiter`` answers while Redis does not."""

    def __init__(self, client: Redis, per_minute: int, *, prefix: str = "gpuplan:") -> None:
        self._client = client
        self._limit = per_minute
        self._prefix = f"{prefix}ratelimit:"
        self._fallback = WindowLimiter(per_minute)
        self._script = client.register_script(_HIT)

    @classmethod
    def from_url(
        cls, url: str, per_minute: int, *, timeout_ms: int, prefix: str = "gpuplan:"
    ) -> RedisWindowLimiter:
        seconds = timeout_ms / 1000
        client = Redis.from_url(url, socket_timeout=seconds, socket_connect_timeout=seconds)
        return cls(client, per_minute, prefix=prefix)

    async def hit(self, key: str) -> float | None:
        try:
            count, ttl_ms = await self._script(
                keys=[self._prefix + key], args=[int(WINDOW_S * 1000)]
            )
        except Exception as exc:  # noqa: BLE001 - any Redis failure: limit in process instead
            log.warning(
                "rate limit counted in process: Redis did not answer",
                extra={"event": "ratelimit_fallback", "error": type(exc).__name__},
            )
            return self._fallback.admit(key)
        if int(count) > self._limit:
            return max(int(ttl_ms), 0) / 1000
        return None

    async def close(self) -> None:
        await self._client.aclose()
