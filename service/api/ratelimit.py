"""Write rate limit: a sliding one-minute window per client address, per process.

Attached only to the admin write handlers, so reads pay nothing. Over the limit the answer is
429 with ``Retry-After`` (seconds until the oldest write in the window ages out). The count is
taken before authentication, so a client guessing keys is throttled too.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from litestar.exceptions import TooManyRequestsException
from litestar.types import ASGIApp, Receive, Scope, Send

WINDOW_S = 60.0


class WindowLimiter:
    """At most ``per_minute`` events per key in any 60-second window."""

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
        if len(self._events) > 10_000:  # drop idle clients so the table stays small
            for idle in [k for k, v in self._events.items() if not v or v[-1] <= now - WINDOW_S]:
                del self._events[idle]
        return None


class WriteRateLimit:
    """Per-handler ASGI middleware; the limiter lives in ``app.state.write_limiter``."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        limiter: WindowLimiter | None = scope["litestar_app"].state.get("write_limiter")
        if limiter is not None:
            client: Any = scope.get("client")
            wait = limiter.admit(str(client[0]) if client else "unknown")
            if wait is not None:
                raise TooManyRequestsException(
                    headers={"Retry-After": str(max(1, math.ceil(wait)))}
                )
        await self._app(scope, receive, send)
