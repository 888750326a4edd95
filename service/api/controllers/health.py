"""Liveness and readiness probes."""

from __future__ import annotations

from typing import Literal

from litestar import Controller, Response, get
from litestar.di import NamedDependency
from litestar.openapi.datastructures import ResponseSpec
from litestar.status_codes import HTTP_200_OK, HTTP_503_SERVICE_UNAVAILABLE

from service.api.openapi_docs import problems, success
from service.api.schemas.common import WireOut
from service.usecases.readiness import DependencyStatus, ReadinessCheck


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

    @get(
        "/healthz",
        operation_id="getLiveness",
        responses=problems(400),
        summary="Process is alive",
        cache=False,
    )
    async def healthz(self) -> Liveness:
        """Always 200 while the process can answer HTTP (it takes no query parameters)."""
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
            **problems(400),
        },
        summary="Dependencies reachable",
        cache=False,
    )
    async def readyz(self, readiness: NamedDependency[ReadinessCheck]) -> Response[Readiness]:
        """Database and cache each reported. 200 while plans can be answered (`degraded` when a
        dependency is down but the loaded catalog still serves); 503 when no catalog is loaded."""
        report = await readiness.check()
        body = Readiness(
            status=report.status,
            database=_dependency(report.database),
            cache=_dependency(report.cache),
            catalog=CatalogHealth(loaded_revision=report.loaded_revision, stale=report.stale),
        )
        code = HTTP_503_SERVICE_UNAVAILABLE if report.status == "unavailable" else HTTP_200_OK
        return Response(body, status_code=code, headers={"Cache-Control": "no-store"})


def _dependency(status: DependencyStatus) -> DependencyHealth:
    return DependencyHealth(ok=status.ok, backend=status.backend, error=status.error)
