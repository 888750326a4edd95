"""Liveness and readiness probes."""

from __future__ import annotations

import asyncio
from typing import Literal

from litestar import Controller, Response, get
from litestar.di import NamedDependency
from litestar.openapi.datastructures import ResponseSpec
from litestar.status_codes import HTTP_200_OK, HTTP_503_SERVICE_UNAVAILABLE

from service.api.openapi_docs import success
from service.api.schemas.common import WireOut
from service.cache.base import CacheUnavailable, PlanCache
from service.usecases.catalog import CatalogService

PROBE_TIMEOUT_S = 1.0


class Liveness(WireOut, kw_only=True):
    status: Literal["ok"]


class DependencyHealth(WireOut, kw_only=True):
    ok: bool
    backend: str
    error: str | None = None


class CatalogHealth(WireOut, kw_only=True):
    loaded_revision: int | None
    stale: bool


class Readiness(WireOut, kw_only=True):
    status: Literal["ready", "degraded", "unavailable"]
    database: DependencyHealth
    cache: DependencyHealth
    catalog: CatalogHealth


class HealthController(Controller):
    tags = ("operations",)

    @get("/healthz", operation_id="getLiveness", summary="Process is alive", cache=False)
    async def healthz(self) -> Liveness:
        """Always 200 while the process can answer HTTP."""
        return Liveness(status="ok")

    @get(
        "/readyz",
        operation_id="getReadiness",
        responses={
            **success(Readiness, "readiness", "Ready or degraded: plans can be answered."),
            503: ResponseSpec(
                data_container=Readiness,
                generate_examples=False,
                description="No catalog loaded yet: not ready.",
            ),
        },
        summary="Dependencies reachable",
        cache=False,
    )
    async def readyz(
        self, catalog: NamedDependency[CatalogService], plan_cache: NamedDependency[PlanCache]
    ) -> Response[Readiness]:
        """Database and cache each reported. 200 while plans can be answered (`degraded` when a
        dependency is down but the loaded catalog still serves); 503 when no catalog is loaded."""
        state = catalog.state
        database = await _probe_database(catalog)
        try:
            await asyncio.wait_for(plan_cache.ping(), PROBE_TIMEOUT_S)
            cache = DependencyHealth(ok=True, backend=plan_cache.backend)
        except (CacheUnavailable, TimeoutError) as exc:
            cache = DependencyHealth(ok=False, backend=plan_cache.backend, error=type(exc).__name__)
        loaded = state.loaded_revision
        if loaded is None:
            status: Literal["ready", "degraded", "unavailable"] = "unavailable"
        elif database.ok and cache.ok:
            status = "ready"
        else:
            status = "degraded"
        body = Readiness(
            status=status,
            database=database,
            cache=cache,
            catalog=CatalogHealth(loaded_revision=loaded, stale=not database.ok),
        )
        code = HTTP_503_SERVICE_UNAVAILABLE if status == "unavailable" else HTTP_200_OK
        return Response(body, status_code=code, headers={"Cache-Control": "no-store"})


async def _probe_database(catalog: CatalogService) -> DependencyHealth:
    backend = catalog.backend
    try:
        await asyncio.wait_for(catalog.ping(), PROBE_TIMEOUT_S)
    except Exception as exc:  # noqa: BLE001 - any failure means "not reachable"
        return DependencyHealth(ok=False, backend=backend, error=type(exc).__name__)
    return DependencyHealth(ok=True, backend=backend)
