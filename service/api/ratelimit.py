"""Admin-write rate limits, applied by ``admin_guard`` around authentication.

Two counters, both over a 60-second window:

- **failed authentications per client**: a request whose key is missing or wrong counts against
  its client address; over the limit the answer is 429 instead of 401/403. A correct key is
  checked first and never counted here, so guesses from a shared address (NAT, a proxy) cannot
  lock out the real key holder.
- **writes per key**: an accepted request counts against its key (named by a digest, never the
  key itself), so one key cannot flood the catalog and others' guesses cannot touch its budget.

The client address is the TCP peer. ``X-Forwarded-For`` is read only when that peer is one of
the configured trusted proxies (``GPUPLAN_TRUSTED_PROXIES``, none by default): then the client is
the right-most address in the header that is not itself a trusted proxy, so a client cannot
choose its own address by prepending to the header.

The counters are injected (``Limiter``): in process, or shared through Redis by every replica.
A 429 carries ``Retry-After`` in whole seconds.
"""

from __future__ import annotations

import hashlib
import ipaddress
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from litestar.connection import ASGIConnection
from litestar.exceptions import TooManyRequestsException

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class Limiter(Protocol):
    async def hit(self, key: str) -> float | None:
        """Count one event for ``key``: ``None`` within the limit, else seconds to wait."""
        ...

    async def close(self) -> None: ...


def parse_networks(entries: Iterable[str]) -> tuple[Network, ...]:
    """``10.0.0.0/8``, ``192.0.2.7`` or ``::1`` entries as networks (a bare address is a /32
    or /128)."""
    return tuple(ipaddress.ip_network(entry, strict=False) for entry in entries)


def _trusted(address: str, proxies: tuple[Network, ...]) -> bool:
    try:
        ip = ipaddress.ip_address(address.strip())
    except ValueError:
        return False
    return any(ip in network for network in proxies)


def client_address(peer: str, forwarded_for: Iterable[str], proxies: tuple[Network, ...]) -> str:
    """The client a request counts against: ``peer`` (the TCP peer), unless ``peer`` is a
    trusted proxy, then the right-most ``X-Forwarded-For`` entry that is not a trusted proxy."""
    if not proxies or not _trusted(peer, proxies):
        return peer
    hops = [hop.strip() for value in forwarded_for for hop in value.split(",") if hop.strip()]
    client = peer
    for hop in reversed(hops):
        try:
            client = str(ipaddress.ip_address(hop))
        except ValueError:
            return client  # a malformed hop ends the chain the proxies vouch for
        if not _trusted(client, proxies):
            return client
    return client


def key_id(token: str) -> str:
    """A short digest naming a key in counters (never the key itself)."""
    return hashlib.sha256(token.encode()).hexdigest()[:24]


def _refuse(wait_s: float, detail: str) -> TooManyRequestsException:
    return TooManyRequestsException(detail, headers={"Retry-After": str(max(1, math.ceil(wait_s)))})


@dataclass(frozen=True)
class WriteLimits:
    """What ``admin_guard`` counts with; a ``None`` limiter is a limit switched off."""

    failed_auth: Limiter | None
    writes: Limiter | None
    trusted_proxies: tuple[Network, ...] = ()

    def client(self, connection: ASGIConnection[Any, Any, Any, Any]) -> str:
        peer = connection.client.host if connection.client else "unknown"
        return client_address(
            peer, connection.headers.getall("x-forwarded-for", []), self.trusted_proxies
        )

    async def failed(self, connection: ASGIConnection[Any, Any, Any, Any]) -> None:
        """Count a failed authentication; raise 429 when the client is over its limit."""
        if self.failed_auth is None:
            return
        wait = await self.failed_auth.hit(f"auth:{self.client(connection)}")
        if wait is not None:
            raise _refuse(wait, "too many failed authentications from this client")

    async def write(self, token: str) -> None:
        """Count an accepted write; raise 429 when its key is over its limit."""
        if self.writes is None:
            return
        wait = await self.writes.hit(f"write:{key_id(token)}")
        if wait is not None:
            raise _refuse(wait, "too many writes with this key")

    async def close(self) -> None:
        limiters = {id(x): x for x in (self.failed_auth, self.writes) if x is not None}
        for limiter in limiters.values():
            await limiter.close()
