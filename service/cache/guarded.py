"""A plan cache behind a circuit breaker: after a failure, skip it for a short cool-down, so a
dead or slow Redis costs no per-request timeout; it is tried again after that and used as soon
as it answers."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from service.cache.base import CacheUnavailable, PlanCache

log = logging.getLogger("gpuplan.planning")


class GuardedCache:
    """A ``PlanCache`` behind a circuit breaker: after a failure, skip it for ``cooldown_s``
    seconds (``clock``: monotonic seconds)."""

    def __init__(
        self,
        cache: PlanCache,
        cooldown_s: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.inner = cache
        self._cooldown = cooldown_s
        self._clock = clock
        self._down_until = 0.0

    @property
    def available(self) -> bool:
        """False while the breaker is open (within the cool-down after a failure)."""
        return self._clock() >= self._down_until

    def _failed(self, exc: CacheUnavailable, action: str) -> None:
        if self.available:
            log.warning(
                "plan cache unavailable; bypassing it",
                extra={"event": "cache_down", "action": action, "error": str(exc)},
            )
        self._down_until = self._clock() + self._cooldown

    async def get(self, key: str) -> bytes | None:
        """Raises ``CacheUnavailable`` when the cache is failing (now or recently)."""
        if not self.available:
            raise CacheUnavailable("circuit open")
        try:
            return await self.inner.get(key)
        except CacheUnavailable as exc:
            self._failed(exc, "get")
            raise

    async def set(self, key: str, value: bytes, ttl_s: int) -> bool:
        """Store ``value``; False when the cache is failing (the value is then not kept)."""
        if not self.available:
            return False
        try:
            await self.inner.set(key, value, ttl_s)
        except CacheUnavailable as exc:
            self._failed(exc, "set")
            return False
        return True
