"""Readiness: can this process answer plans now, and which dependency is down if not."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Literal

from service.cache.base import CacheUnavailable, PlanCache
from service.usecases.catalog import CatalogService
from service.usecases.errors import failure_name

PROBE_TIMEOUT_S = 1.0

ReadinessStatus = Literal["ready", "degraded", "unavailable"]


@dataclass(frozen=True, slots=True)
class DependencyStatus:
    ok: bool
    backend: str
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Readiness:
    """``ready``: database and cache answer; ``degraded``: one is down but the loaded catalog
    still answers plans; ``unavailable``: no catalog is loaded yet."""

    status: ReadinessStatus
    database: DependencyStatus
    cache: DependencyStatus
    loaded_revision: int | None
    stale: bool


class ReadinessCheck:
    """Probes the catalog database and the plan cache, each under ``timeout_s``."""

    def __init__(
        self, catalog: CatalogService, cache: PlanCache, *, timeout_s: float = PROBE_TIMEOUT_S
    ) -> None:
        self._catalog = catalog
        self._cache = cache
        self._timeout = timeout_s

    async def check(self) -> Readiness:
        database = await self._probe_database()
        cache = await self._probe_cache()
        loaded = self._catalog.state.loaded_revision
        status: ReadinessStatus
        if loaded is None:
            status = "unavailable"
        elif database.ok and cache.ok:
            status = "ready"
        else:
            status = "degraded"
        return Readiness(
            status=status,
            database=database,
            cache=cache,
            loaded_revision=loaded,
            stale=not database.ok,
        )

    async def _probe_database(self) -> DependencyStatus:
        backend = self._catalog.backend
        try:
            await asyncio.wait_for(self._catalog.ping(), self._timeout)
        except Exception as exc:  # noqa: BLE001 - any failure means "not reachable"
            return DependencyStatus(ok=False, backend=backend, error=failure_name(exc))
        return DependencyStatus(ok=True, backend=backend)

    async def _probe_cache(self) -> DependencyStatus:
        backend = self._cache.backend
        try:
            await asyncio.wait_for(self._cache.ping(), self._timeout)
        except (CacheUnavailable, TimeoutError) as exc:
            return DependencyStatus(ok=False, backend=backend, error=type(exc).__name__)
        return DependencyStatus(ok=True, backend=backend)
