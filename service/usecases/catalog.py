"""Catalog use cases: browse GPUs and prices, replace a GPU spec, ingest price observations."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar

from service.domain.catalog import (
    CatalogSnapshot,
    CatalogSummary,
    GpuSpec,
    IngestResult,
    PricePage,
    PricePoint,
    PriceQuery,
    PutGpuResult,
    cheapest_by_provider,
)
from service.store.repositories import CatalogRepository
from service.usecases.catalog_state import CatalogState
from service.usecases.errors import OUTAGES, ServiceUnavailable

T = TypeVar("T")


class DatabaseDown(ServiceUnavailable):
    """The database is known to be down (the circuit is open); ``cause`` names the failure
    that opened it."""

    def __init__(self, cause: str) -> None:
        super().__init__("the catalog database is unreachable")
        self.cause = cause


@dataclass(frozen=True, slots=True)
class GpuFilter:
    vendor: str | None = None
    min_memory_gb: float | None = None
    has_nvlink: bool | None = None
    form_factor: str | None = None

    def accepts(self, gpu: GpuSpec) -> bool:
        if self.vendor is not None and gpu.vendor.lower() != self.vendor.lower():
            return False
        if self.min_memory_gb is not None and gpu.memory_gb < self.min_memory_gb:
            return False
        if self.has_nvlink is not None and gpu.has_nvlink != self.has_nvlink:
            return False
        return self.form_factor is None or gpu.form_factor.lower() == self.form_factor.lower()


@dataclass(frozen=True, slots=True)
class GpuListing:
    gpu: GpuSpec
    cheapest_on_demand: dict[str, PricePoint]


@dataclass(frozen=True, slots=True)
class CatalogRead:
    """Anything read from the catalog snapshot, with the revision and freshness it had."""

    revision: int
    stale: bool


@dataclass(frozen=True, slots=True)
class GpuList(CatalogRead):
    gpus: tuple[GpuListing, ...]


@dataclass(frozen=True, slots=True)
class GpuDetail(CatalogRead):
    listing: GpuListing


class CatalogService:
    def __init__(
        self,
        repo: CatalogRepository,
        state: CatalogState,
        clock: Callable[[], datetime],
        *,
        timeout_s: float = 2.0,
    ) -> None:
        self._repo = repo
        self._state = state
        self._clock = clock
        self._timeout = timeout_s

    @property
    def state(self) -> CatalogState:
        return self._state

    @property
    def backend(self) -> str:
        return self._repo.backend

    async def ping(self) -> None:
        """Raise unless the database answers a trivial query (``DatabaseDown`` at once while
        the circuit is open: the background poll probes it then)."""
        if self._state.known_down:
            raise DatabaseDown(self._state.last_error or "unknown")
        try:
            await self._repo.ping()
        except OUTAGES as exc:
            self._state.report_failure(exc)
            raise

    async def list_gpus(self, flt: GpuFilter) -> GpuList:
        view = await self._state.current()
        snap = view.snapshot
        listings = tuple(_listing(snap, g) for g in snap.gpus if flt.accepts(g))
        return GpuList(revision=snap.revision, stale=view.stale, gpus=listings)

    async def get_gpu(self, name: str) -> GpuDetail:
        view = await self._state.current()
        gpu = view.snapshot.resolve_gpu(name, field_name="id")
        return GpuDetail(
            revision=view.snapshot.revision, stale=view.stale, listing=_listing(view.snapshot, gpu)
        )

    async def put_gpu(self, gpu: GpuSpec) -> PutGpuResult:
        result = await self._db(lambda: self._repo.put_gpu(gpu, self._clock()), "replacing a GPU")
        self._state.advance(result.revision)
        return result

    async def price_history(self, name: str, query: PriceQuery) -> tuple[str, PricePage]:
        view = await self._state.current()
        gpu = view.snapshot.resolve_gpu(name, field_name="id")
        page = await self._db(
            lambda: self._repo.price_history(gpu.id, query), "reading price history"
        )
        return gpu.id, page

    async def ingest(self, points: Sequence[PricePoint]) -> IngestResult:
        """Append observations (ids or aliases accepted), all or nothing, idempotently."""
        view = await self._state.current()
        resolved = view.snapshot.with_gpu_ids(points)
        result = await self._db(
            lambda: self._repo.ingest_prices(resolved, self._clock()),
            "ingesting prices",
            timeout_s=max(self._timeout, 30.0),
        )
        self._state.advance(result.revision)
        return result

    async def summary(self) -> CatalogSummary:
        return await self._db(self._repo.summary, "reading the catalog")

    async def _db(
        self, call: Callable[[], Awaitable[T]], what: str, *, timeout_s: float | None = None
    ) -> T:
        """A repository call under the catalog state's outage guard."""
        return await self._state.call_database(call, timeout_s or self._timeout, what)


def _listing(snapshot: CatalogSnapshot, gpu: GpuSpec) -> GpuListing:
    return GpuListing(gpu=gpu, cheapest_on_demand=cheapest_by_provider(snapshot.prices, gpu.id))
