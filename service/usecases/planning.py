"""Plan use case: decide WHEN to answer from the cache and when to solve.

- **Key.** ``plan_id = sha256(schema version | catalog revision | canonical request)`` (first
  32 hex digits); the cache key is ``plans:v{SCHEMA}:{plan_id}``. Any catalog write bumps the
  revision, so no plan solved on old prices answers a new request. The canonical request has
  every default filled, aliases resolved and lists sorted, so equivalent requests share a plan.
- **Single flight.** Concurrent identical misses share one solve.
- **Off the event loop.** Solves run in worker threads under a cap (``SolverPool``); when the
  queue is full the answer is 503 with Retry-After instead of an ever-growing backlog. Every
  solve has a MILP time limit and an overall deadline.
- **Two tiers.** With Redis, a small in-process LRU sits in front of it: plan bodies never
  change for a plan id (the id includes the catalog revision), so a local copy is always
  right, and a hit costs no network round trip. Local copies live at most
  ``LOCAL_TTL_S`` (or the cache TTL when shorter).
- **Cache trouble is not an outage.** A failing or slow cache (``CacheUnavailable``) makes the
  request a ``bypass``: solved and answered anyway. After a failure the cache is skipped for a
  short cool-down (a circuit breaker) so a dead Redis costs no per-request timeout; it is tried
  again after that and used as soon as it answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from service.cache.base import CacheUnavailable, PlanCache
from service.cache.guarded import GuardedCache
from service.domain.catalog import CatalogSnapshot
from service.domain.errors import NotFound
from service.domain.planner import Plan, PlanRequest, plan
from service.observability.metrics import Metrics
from service.usecases.catalog_state import CatalogState, SnapshotView
from service.usecases.errors import ServiceUnavailable
from service.usecases.solver_pool import SolverPool

log = logging.getLogger("gpuplan.planning")

SCHEMA_VERSION = 1
LOCAL_TTL_S = 300
CacheOutcome = Literal["hit", "miss", "bypass"]
Render = Callable[[Plan, str, int], bytes]


class UnknownPlan(NotFound):
    kind = "plan"

    def __init__(self, plan_id: str, ttl_s: int) -> None:
        super().__init__(plan_id, field="plan_id")
        self.message = (
            f"plan {plan_id!r} is unknown or expired (plans are kept {ttl_s} s); solve its "
            "request again: the same request at the same catalog revision gets the same plan_id"
        )


@dataclass(frozen=True, slots=True)
class PlanAnswer:
    body: bytes
    plan_id: str
    cache: CacheOutcome
    stale: bool


def plan_id_for(canonical: bytes, revision: int) -> str:
    digest = hashlib.sha256(f"gpuplan-plan|v{SCHEMA_VERSION}|r{revision}|".encode() + canonical)
    return digest.hexdigest()[:32]


def cache_key(plan_id: str) -> str:
    return f"plans:v{SCHEMA_VERSION}:{plan_id}"


class PlanningService:
    def __init__(
        self,
        state: CatalogState,
        cache: PlanCache,
        pool: SolverPool,
        metrics: Metrics,
        *,
        ttl_s: int,
        time_limit_s: float,
        local: PlanCache | None = None,
    ) -> None:
        self._state = state
        self._cache = GuardedCache(cache)
        self._local = local
        self._local_ttl = min(ttl_s, LOCAL_TTL_S)
        self._pool = pool
        self._metrics = metrics
        self._ttl = ttl_s
        self.time_limit_s = time_limit_s
        self._deadline_s = time_limit_s * 4 + 10.0
        self._flights: dict[str, asyncio.Task[bytes]] = {}

    @property
    def local_cache(self) -> PlanCache | None:
        """The plan cache held in this process: the local tier, or the cache itself when it
        is in-process."""
        if self._local is not None:
            return self._local
        inner = self._cache.inner
        return inner if inner.backend == "memory" else None

    async def snapshot(self, as_of: datetime | None) -> SnapshotView:
        return await (self._state.as_of(as_of) if as_of is not None else self._state.current())

    async def answer(
        self, request: PlanRequest, plan_id: str, view: SnapshotView, render: Render
    ) -> PlanAnswer:
        """The plan ``plan_id`` (see :func:`plan_id_for`) for ``request`` at the snapshot's
        revision: cached, coalesced or solved."""
        revision = view.snapshot.revision
        key = cache_key(plan_id)
        outcome: CacheOutcome = "miss"
        cached = await self._get(key)
        if cached is None:
            outcome = "bypass"
        elif cached:
            self._metrics.cache.labels("hit").inc()
            return PlanAnswer(cached, plan_id, "hit", view.stale)
        self._metrics.cache.labels(outcome).inc()
        task = self._flights.get(key)
        if task is None:
            task = asyncio.create_task(
                self._solve_and_store(key, request, view.snapshot, render, plan_id, revision)
            )
            self._flights[key] = task
            task.add_done_callback(lambda done: self._settle(key, done))
        try:
            body = await asyncio.wait_for(asyncio.shield(task), self._deadline_s)
        except TimeoutError:
            raise ServiceUnavailable(
                f"the solve did not finish within {self._deadline_s:g} s", retry_after_s=5
            ) from None
        return PlanAnswer(body, plan_id, outcome, view.stale)

    def _settle(self, key: str, task: asyncio.Task[bytes]) -> None:
        """Forget a finished solve; read its error so a solve nobody waits for any more (its
        callers timed out) is not reported as an unretrieved exception."""
        self._flights.pop(key, None)
        if not task.cancelled() and task.exception() is not None:
            log.warning("plan solve failed", extra={"event": "solve_failed", "plan_key": key})

    async def _solve_and_store(
        self,
        key: str,
        request: PlanRequest,
        snapshot: CatalogSnapshot,
        render: Render,
        plan_id: str,
        revision: int,
    ) -> bytes:
        def work() -> bytes:
            started = time.perf_counter()
            result = plan(request, snapshot, executor=self._pool.helpers)
            body = render(result, plan_id, revision)
            self._metrics.solve_seconds.observe(time.perf_counter() - started)
            return body

        body = await self._pool.run(work)
        if self._local is not None:
            await self._local.set(key, body, self._local_ttl)
        await self._cache.set(key, body, self._ttl)
        return body

    async def _get(self, key: str) -> bytes | None:
        """The cached body, ``b""`` on a miss, ``None`` when the shared cache is unavailable
        (a local copy still answers then)."""
        if self._local is not None:
            local = await self._local.get(key)
            if local is not None:
                return local
        try:
            shared = await self._cache.get(key)
        except CacheUnavailable:
            return None
        if shared is None:
            return b""
        if self._local is not None:
            await self._local.set(key, shared, self._local_ttl)
        return shared

    async def lookup(self, plan_id: str) -> bytes:
        """A plan solved earlier, by id, while its cache entry lives."""
        cached = await self._get(cache_key(plan_id))
        if cached is None:
            raise ServiceUnavailable(
                "the plan cache is unreachable; solve the plan's request again",
                retry_after_s=5,
            )
        if not cached:
            raise UnknownPlan(plan_id, self._ttl)
        return cached

    async def close(self) -> None:
        for task in list(self._flights.values()):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._pool.shutdown()
