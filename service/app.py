"""Application factory: ``create_app(settings) -> Litestar``.

The lifespan owns every connection: the database engine (migrating an embedded SQLite file on
first start), the plan cache (Redis or in-process), the catalog snapshot and its refresh task.
Only this module and the CLI read settings; everything below receives plain values.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime

from litestar import Litestar, Response, Router, get
from litestar.config.cors import CORSConfig
from litestar.datastructures import State
from litestar.di import NamedDependency, Provide
from litestar.openapi.config import OpenAPIConfig
from litestar.openapi.spec import Components, SecurityScheme
from sqlalchemy.ext.asyncio import AsyncEngine

from service import __version__
from service.api.assets import docs_render_plugins, static_router
from service.api.auth import AdminKeys
from service.api.controllers.benchmarks import BenchmarkController
from service.api.controllers.calibrations import CalibrationController
from service.api.controllers.catalog import CatalogController, PriceIngestController
from service.api.controllers.curves import CurvesController
from service.api.controllers.estimate import EstimateController, ModelsController
from service.api.controllers.health import HealthController
from service.api.controllers.plans import PlansController
from service.api.controllers.price_import import PriceImportController
from service.api.errors import EXCEPTION_HANDLERS
from service.api.json_body import JsonRequest
from service.api.openapi_docs import ExactStructSchemaPlugin, problems
from service.api.page import planning_page
from service.api.ratelimit import Limiter, WriteLimits, parse_networks
from service.api.strict_query import check_parameters
from service.cache.base import PlanCache
from service.cache.memory import MemoryPlanCache
from service.cache.ratelimit import RedisWindowLimiter, WindowLimiter
from service.cache.redis import RedisPlanCache
from service.heap import settle_heap
from service.observability.metrics import CONTENT_TYPE, Metrics
from service.observability.middleware import RequestContext
from service.settings import Settings, redact_url
from service.store.benchmarks import BenchmarkRepository
from service.store.database import create_engine
from service.store.migrate import current_revision, head_revision, upgrade
from service.store.profiles import ProfileRepository
from service.store.repositories import CatalogRepository
from service.usecases.benchmarks import BenchmarkService
from service.usecases.calibrating import CalibrationService, ProfileResolver
from service.usecases.catalog import CatalogService
from service.usecases.catalog_state import CatalogState
from service.usecases.charts import CurvesService
from service.usecases.estimating import EstimatingService
from service.usecases.planning import LOCAL_ENTRIES, PlanningService
from service.usecases.price_import import PriceImportService
from service.usecases.readiness import ReadinessCheck
from service.usecases.solver_pool import SolverPool

log = logging.getLogger("gpuplan.app")


def utc_now() -> datetime:
    return datetime.now(UTC)


class SchemaBehind(RuntimeError):
    """The database schema is older than this build: run ``gpuplan migrate`` first."""


@dataclass
class Services:
    """What the lifespan built; handlers reach it through named dependencies."""

    catalog: CatalogService
    plan_cache: PlanCache
    metrics: Metrics
    planning: PlanningService
    curves: CurvesService
    estimating: EstimatingService
    price_import: PriceImportService
    benchmarks: BenchmarkService
    calibrations: CalibrationService


def _services(state: State) -> Services:
    services: Services = state.services
    return services


def provide_catalog(state: State) -> CatalogService:
    return _services(state).catalog


def provide_readiness(state: State) -> ReadinessCheck:
    services = _services(state)
    return ReadinessCheck(services.catalog, services.plan_cache)


def provide_metrics(state: State) -> Metrics:
    return _services(state).metrics


def provide_planning(state: State) -> PlanningService:
    return _services(state).planning


def provide_curves(state: State) -> CurvesService:
    return _services(state).curves


def provide_estimating(state: State) -> EstimatingService:
    return _services(state).estimating


def provide_price_import(state: State) -> PriceImportService:
    return _services(state).price_import


def provide_benchmarks(state: State) -> BenchmarkService:
    return _services(state).benchmarks


def provide_calibrations(state: State) -> CalibrationService:
    return _services(state).calibrations


@get(
    "/metrics",
    operation_id="getMetrics",
    summary="Prometheus metrics",
    tags=["operations"],
    media_type=CONTENT_TYPE,
    include_in_schema=True,
    responses=problems(400),
)
async def metrics_endpoint(
    metrics: NamedDependency[Metrics],
    catalog: NamedDependency[CatalogService],
    planning: NamedDependency[PlanningService],
) -> Response[bytes]:
    """Request counts and latency by route and status, solve durations, cache outcomes,
    catalog revision and staleness, solver queue depth (Prometheus text format)."""
    state = catalog.state
    if state.loaded_revision is not None:
        metrics.catalog_revision.set(state.loaded_revision)
    metrics.catalog_stale.set(0 if state.database_ok else 1)
    entries, size_bytes = planning.held_in_process()
    metrics.plan_cache_entries.set(entries)
    metrics.plan_cache_bytes.set(size_bytes)
    return Response(metrics.render(), media_type=CONTENT_TYPE)


async def _prepare_schema(settings: Settings, engine: AsyncEngine) -> None:
    """SQLite (embedded or explicit) is migrated in place; Postgres must already be at head
    (``gpuplan migrate`` / the migration Job), else startup stops with that instruction. An
    unreachable Postgres is not fatal: the service starts and reports itself unready."""
    if settings.database_backend == "sqlite":
        await upgrade(engine)
        return
    try:
        at = await current_revision(engine)
    except Exception as exc:  # noqa: BLE001 - outage at startup: start anyway, report unready
        log.warning(
            "database unreachable at startup; serving 503 until it answers",
            extra={"event": "database_down", "error": type(exc).__name__},
        )
        return
    head = head_revision()
    if at != head:
        raise SchemaBehind(
            f"database schema is at {at or 'nothing'}, this build needs {head}: "
            "run `gpuplan migrate`"
        )


EXPOSED_HEADERS = (
    "ETag",
    "Retry-After",
    "X-Cache",
    "X-Catalog-Revision",
    "X-Catalog-Stale",
    "X-Prices-Age-Days",
    "X-Prices-Stale",
    "X-Request-Id",
)
"""Response headers a browser page on an allowed origin may read (CORS hides all but a few
by default): the plan's id, cache outcome, catalog revision and staleness, how old its prices
are, when to retry, and the request id to quote in a report."""


def create_app(
    settings: Settings,
    *,
    clock: Callable[[], datetime] = utc_now,
    plan_cache: PlanCache | None = None,
    cache_prefix: str = "gpuplan:",
) -> Litestar:
    """Build the application. ``plan_cache`` and ``cache_prefix`` let tests isolate caches."""
    metrics = Metrics()
    limiter = _build_limiter(settings, cache_prefix)  # one counter store, keys by kind
    write_limits = WriteLimits(
        failed_auth=limiter,
        writes=limiter,
        trusted_proxies=parse_networks(settings.trusted_proxies),
    )

    @asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        engine = create_engine(settings.database_url, timeout_s=settings.database_timeout_s)
        cache = plan_cache if plan_cache is not None else _build_cache(settings, cache_prefix)
        try:
            await _prepare_schema(settings, engine)
            repo = CatalogRepository(engine)
            state = CatalogState(
                repo,
                refresh_interval_s=settings.catalog_refresh_s,
                timeout_s=settings.database_timeout_s,
                on_load=settle_heap if settings.settle_heap else None,
            )
            await state.start()
            pool = SolverPool(
                settings.solver_workers,
                settings.solver_queue,
                metrics,
                helper_processes=settings.solver_helper_processes,
            )
            await pool.warm()
            profiles = ProfileResolver(
                ProfileRepository(engine),
                state,
                settings.default_calibration,
                timeout_s=settings.database_timeout_s,
            )
            calibrations = CalibrationService(
                BenchmarkRepository(engine),
                ProfileRepository(engine),
                state,
                clock,
                timeout_s=settings.database_timeout_s,
            )
            planning = PlanningService(
                state,
                cache,
                pool,
                metrics,
                ttl_s=settings.plan_cache_ttl_s,
                time_limit_s=settings.solve_time_limit_s,
                defaults=settings.plan_defaults,
                local_entries=min(settings.plan_cache_max_entries, LOCAL_ENTRIES),
                profiles=profiles,
                clock=clock,
            )
            app.state.services = Services(
                catalog=CatalogService(repo, state, clock, timeout_s=settings.database_timeout_s),
                plan_cache=cache,
                metrics=metrics,
                planning=planning,
                curves=CurvesService(planning, state, cache, pool, ttl_s=settings.plan_cache_ttl_s),
                estimating=EstimatingService(state, profiles),
                price_import=PriceImportService(
                    repo, state, clock, timeout_s=settings.database_timeout_s
                ),
                benchmarks=BenchmarkService(
                    BenchmarkRepository(engine),
                    state,
                    clock,
                    timeout_s=settings.database_timeout_s,
                ),
                calibrations=calibrations,
            )
            log.info(
                "gpuplan started",
                extra={
                    "event": "startup",
                    "version": __version__,
                    "database": redact_url(settings.database_url),
                    "cache": settings.cache_backend,
                    "catalog_revision": state.loaded_revision,
                },
            )
            try:
                yield
            finally:
                await calibrations.close()
                await planning.close()
                await state.stop()
                log.info("gpuplan stopped", extra={"event": "shutdown"})
        finally:
            await cache.close()
            await write_limits.close()
            await engine.dispose()

    ingest_router = Router(
        path="/",
        route_handlers=[PriceIngestController, PriceImportController, BenchmarkController],
        request_max_body_size=settings.max_ingest_body_bytes,
    )
    app = Litestar(
        route_handlers=[
            CatalogController,
            ingest_router,
            PlansController,
            CurvesController,
            CalibrationController,
            EstimateController,
            ModelsController,
            HealthController,
            metrics_endpoint,
            static_router(),
            planning_page,
        ],
        lifespan=[lifespan],
        dependencies={
            "catalog": Provide(provide_catalog, sync_to_thread=False),
            "readiness": Provide(provide_readiness, sync_to_thread=False),
            "metrics": Provide(provide_metrics, sync_to_thread=False),
            "planning": Provide(provide_planning, sync_to_thread=False),
            "curves": Provide(provide_curves, sync_to_thread=False),
            "estimating": Provide(provide_estimating, sync_to_thread=False),
            "price_import": Provide(provide_price_import, sync_to_thread=False),
            "benchmarks": Provide(provide_benchmarks, sync_to_thread=False),
            "calibrations": Provide(provide_calibrations, sync_to_thread=False),
        },
        exception_handlers=EXCEPTION_HANDLERS,
        request_class=JsonRequest,
        before_request=check_parameters,
        request_max_body_size=settings.max_body_bytes,
        cors_config=CORSConfig(
            allow_origins=list(settings.cors_origins), expose_headers=list(EXPOSED_HEADERS)
        )
        if settings.cors_origins
        else None,
        openapi_config=openapi_config(),
        state=State(
            {
                "admin_keys": AdminKeys(settings.admin_keys),
                "write_limits": write_limits,
            }
        ),
        plugins=[ExactStructSchemaPlugin()],
        logging_config=None,  # the CLI configures logging once, for gpuplan and uvicorn alike
        debug=False,
    )
    app.asgi_handler = RequestContext(app.asgi_handler, metrics)
    return app


def app_from_environment() -> Litestar:
    """Factory for ``uvicorn --factory``: settings from ``GPUPLAN_*``, JSON logs configured."""
    from service.observability.logging import configure_logging
    from service.settings import load_settings

    settings = load_settings()
    configure_logging(settings.log_level, settings.log_format)
    return create_app(settings)


def openapi_config() -> OpenAPIConfig:
    return OpenAPIConfig(
        title="gpuplan",
        version=__version__,
        description=(
            "Capacity planning for LLM-serving GPU fleets: the cheapest GPU mix and card count "
            "for a model, load, latency SLO and budget. Errors are RFC 9457 problem details."
        ),
        path="/docs",
        render_plugins=docs_render_plugins(),
        components=Components(
            security_schemes={
                "bearerAuth": SecurityScheme(
                    type="http",
                    scheme="bearer",
                    description="An admin key from GPUPLAN_ADMIN_KEYS (writes only).",
                )
            }
        ),
        use_handler_docstrings=True,
    )


def _build_cache(settings: Settings, prefix: str) -> PlanCache:
    if settings.redis_url:
        return RedisPlanCache.from_url(
            settings.redis_url, timeout_ms=settings.redis_timeout_ms, prefix=prefix
        )
    return MemoryPlanCache(max_entries=settings.plan_cache_max_entries)


def _build_limiter(settings: Settings, prefix: str) -> Limiter | None:
    """Admin-write counters: shared by every replica through Redis when one is configured."""
    per_minute = settings.write_rate_limit_per_minute
    if per_minute <= 0:
        return None
    if settings.redis_url:
        return RedisWindowLimiter.from_url(
            settings.redis_url, per_minute, timeout_ms=settings.redis_timeout_ms, prefix=prefix
        )
    return WindowLimiter(per_minute)
