"""Request context for every HTTP request: request id, one access-log line, metrics.

Wraps Litestar's whole ASGI handler (not a route middleware), so 404s, 405s and errors raised
before routing are observed too.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from typing import Any

from litestar.enums import ScopeType
from litestar.types import ASGIApp, HTTPScope, Message, Receive, Scope, Send

from service.observability.metrics import Metrics

log = logging.getLogger("gpuplan.access")

REQUEST_ID_HEADER = b"x-request-id"
_VALID_ID = re.compile(rb"^[A-Za-z0-9._:-]{1,128}$")


class RequestContext:
    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self._app = app
        self._metrics = metrics
        # Labelled children, looked up once per (route, method[, status]): label lookups cost
        # more than the increments themselves. Routes are templates, so these stay small.
        self._counters: dict[tuple[str, str, int], Any] = {}
        self._timers: dict[tuple[str, str], Any] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP:
            await self._app(scope, receive, send)
            return
        await self._observe(scope, receive, send)

    async def _observe(self, scope: HTTPScope, receive: Receive, send: Send) -> None:
        request_id = _request_id(scope)
        state: dict[str, Any] = scope.setdefault("state", {})
        state["request_id"] = request_id
        status = 500
        started = time.perf_counter()

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                headers = list(message.get("headers", []))
                headers.append((REQUEST_ID_HEADER, request_id.encode()))
                message["headers"] = headers
            await send(message)

        try:
            await self._app(scope, receive, send_with_id)
        finally:
            elapsed = time.perf_counter() - started
            route = scope.get("path_template") or "unmatched"
            method = scope["method"]
            counter = self._counters.get((route, method, status))
            if counter is None:
                counter = self._metrics.requests.labels(route, method, str(status))
                self._counters[(route, method, status)] = counter
            counter.inc()
            timer = self._timers.get((route, method))
            if timer is None:
                timer = self._metrics.request_seconds.labels(route, method)
                self._timers[(route, method)] = timer
            timer.observe(elapsed)
            log.info(
                "request",
                extra={
                    "method": method,
                    "route": route,
                    "path": scope["path"],
                    "status": status,
                    "duration_ms": round(elapsed * 1000, 3),
                    "cache": state.get("cache"),
                    "request_id": request_id,
                },
            )


def _request_id(scope: HTTPScope) -> str:
    for name, value in scope["headers"]:
        if name == REQUEST_ID_HEADER and _VALID_ID.match(value):
            return value.decode()
    return uuid.uuid4().hex
