"""Admin-key authentication for write endpoints.

Keys are compared as SHA-256 digests with ``hmac.compare_digest`` against every configured key
(no early exit), so timing reveals neither which key matched nor how much of one did. Keys are
never logged or echoed: errors say only that a key was missing or not accepted.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable
from typing import Any

from litestar.connection import ASGIConnection
from litestar.exceptions import NotAuthorizedException, PermissionDeniedException
from litestar.handlers.base import BaseRouteHandler

from service.api.ratelimit import WriteLimits


class AdminKeys:
    def __init__(self, keys: Iterable[str]) -> None:
        self._digests = tuple(hashlib.sha256(k.encode()).digest() for k in keys)

    def __repr__(self) -> str:
        return f"AdminKeys(<{len(self._digests)} keys>)"

    @property
    def configured(self) -> bool:
        return bool(self._digests)

    def accepts(self, presented: str) -> bool:
        digest = hashlib.sha256(presented.encode()).digest()
        matched = False
        for known in self._digests:
            matched |= hmac.compare_digest(digest, known)
        return matched


def bearer_token(connection: ASGIConnection[Any, Any, Any, Any]) -> str:
    header = connection.headers.get("authorization")
    if not header:
        raise NotAuthorizedException("this endpoint writes; send Authorization: Bearer <admin key>")
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise NotAuthorizedException("expected Authorization: Bearer <admin key>")
    return token.strip()


async def admin_guard(connection: ASGIConnection[Any, Any, Any, Any], _: BaseRouteHandler) -> None:
    """Litestar guard: 401 without a bearer key, 403 when the key is not an admin key, 429 when
    the client is over its failed-authentication limit or the key over its write limit
    (``service.api.ratelimit``)."""
    keys: AdminKeys = connection.app.state.admin_keys
    limits: WriteLimits = connection.app.state.write_limits
    try:
        token = bearer_token(connection)
    except NotAuthorizedException:
        await limits.failed(connection)
        raise
    if keys.accepts(token):
        await limits.write(token)
        return
    await limits.failed(connection)
    if not keys.configured:
        raise PermissionDeniedException(
            "writes are disabled: the server has no admin keys (GPUPLAN_ADMIN_KEYS)"
        )
    raise PermissionDeniedException("the presented key is not an admin key")
