"""Plan use case: decide WHEN to answer from the cache and when to solve.

``PlanningService.solve(draft)`` is the one way to a plan, for the HTTP API and the CLI alike:

- **Snapshot.** The current catalog snapshot, or the one with the prices known at the
  draft's ``as_of``.
- **Identity.** The draft is canonicalised (``domain.planner.canonical_request``) and the plan
  id computed (``domain.planner.plan_id``: the canonical request plus the catalog revision, so
  any catalog write re-keys every plan). Both are memoised per (revision, draft), so a repeated
  request costs a dictionary lookup.
- **Two tiers.** An in-process LRU of decoded plans sits in front of the plan cache (Redis, or
  an in-process byte LRU when no Redis is configured); the cache holds the msgpack encoding of
  the domain value (``cache.codec``). A plan never changes for a plan id, so a local copy is
  always right, and a hit costs no network round trip and no decoding. Local copies live at
  most ``LOCAL_TTL_S`` (or the cache TTL when shorter).
- **Single flight.** Concurrent identical misses share one solve.
- **Off the event loop.** Solves run in worker threads under a cap (``SolverPool``); every
  solve has a MILP time limit and an overall deadline.
- **Cache trouble is not an outage.** A failing or slow cache makes the request a ``bypass``:
  solved and answered anyway, and the cache skipped for a short cool-down (``GuardedCache``).

Renderings (JSON, text, flat) are the callers' business: this module returns domain values.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal, Protocol

import msgspec

from service.cache.base import CacheUnavailable, PlanCache
from service.cache.codec import PlanCodec, plan_key
from service.cache.guarded import GuardedCache
from service.cache.lru import TtlLru
from service.cache.memory import MemoryPlanCache
from service.domain.catalog import CatalogSnapshot
from service.domain.errors import NotFound
from service.domain.moments import to_utc
from service.domain.planner import (
    PlanDefaults,
    PlanDraft,
    PlanRequest,
    PriceAge,
    SolvedPlan,
    canonical_request,
    plan,
    plan_id,
    price_age,
)
from service.domain.profiles.values import CalibrationProfile
from service.usecases.calibrating import ProfileResolver
from service.usecases.catalog_state import SnapshotView
from service.usecases.errors import ServiceUnavailable
from service.usecases.solver_pool import SolverPool

log = logging.getLogger("gpuplan.planning")

LOCAL_TTL_S = 300
LOCAL_ENTRIES = 512
LOCAL_BYTES = 32 * 1024 * 1024
CacheOutcome = Literal["hit", "miss", "bypass"]


class Snapshots(Protocol):
    """Where catalog snapshots come from (``CatalogState``)."""

    async def current(self) -> SnapshotView: ...

    async def as_of(self, moment: datetime) -> SnapshotView: ...


class PlanningMetrics(Protocol):
    """What the use case reports (the service's Prometheus metrics, or nothing in the CLI)."""

    def cache_lookup(self, outcome: CacheOutcome) -> None: ...

    def solve_finished(self, seconds: float) -> None: ...

    def solver_load(self, running: int, queued: int) -> None: ...


class SilentMetrics:
    """Reports nothing (``gpuplan plan``)."""

    def cache_lookup(self, outcome: CacheOutcome) -> None:
        return None

    def solve_finished(self, seconds: float) -> None:
        return None

    def solver_load(self, running: int, queued: int) -> None:
        return None


class UnknownPlan(NotFound):
    kind = "plan"

    def __init__(self, plan_id: str, ttl_s: int, *, remedy: str | None = None) -> None:
        super().__init__(plan_id, field="plan_id")
        self.plan_id = plan_id
        self.ttl_s = ttl_s
        self.message = (
            f"plan {plan_id!r} is unknown or expired (plans are kept {ttl_s} s); solve its "
            "request again: the same request at the same catalog revision gets the same plan_id"
            + (f" ({remedy})" if remedy else "")
        )


@dataclass(frozen=True, slots=True)
class PlanOutcome:
    """The answer to one plan request. ``solved`` is ``None`` (and ``cache`` too) only when
    the caller already holds plan ``plan_id`` (see ``PlanningService.solve``'s ``known``)."""

    plan_id: str
    revision: int
    stale: bool
    cache: CacheOutcome | None
    solved: SolvedPlan | None


class CanonicalMemo:
    """Canonical requests and plan ids by (catalog revision, encoded draft): a repeated request
    skips canonicalisation. Bounded LRU; only successful canonicalisations are kept. One per
    service: the catalog a revision names belongs to that service's database."""

    def __init__(self, max_entries: int = 4096) -> None:
        self._entries: OrderedDict[tuple[int, str, bytes], tuple[PlanRequest, str]] = OrderedDict()
        self._max = max_entries
        self._encoder = msgspec.msgpack.Encoder()

    def canonical(
        self,
        draft: PlanDraft,
        snapshot: CatalogSnapshot,
        time_limit_s: float,
        defaults: PlanDefaults | None = None,
        calibration: CalibrationProfile | None = None,
    ) -> tuple[PlanRequest, str]:
        """The canonical request and its plan id at the snapshot's revision (one memo serves
        one service, so one set of defaults) and the calibration profile version the draft
        resolved to."""
        spec = calibration.spec if calibration is not None else ""
        key = (snapshot.revision, spec, self._encoder.encode(draft))
        found = self._entries.get(key)
        if found is not None:
            self._entries.move_to_end(key)
            return found
        request = canonical_request(
            draft, snapshot, time_limit_s=time_limit_s, defaults=defaults, calibration=calibration
        )
        result = (request, plan_id(request, snapshot.revision))
        self._entries[key] = result
        if len(self._entries) > self._max:
            self._entries.popitem(last=False)
        return result


class PlanningService:
    def __init__(
        self,
        state: Snapshots,
        cache: PlanCache,
        pool: SolverPool,
        metrics: PlanningMetrics,
        *,
        ttl_s: int,
        time_limit_s: float,
        defaults: PlanDefaults | None = None,
        local_entries: int = LOCAL_ENTRIES,
        local_bytes: int = LOCAL_BYTES,
        profiles: ProfileResolver | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._state = state
        self._profiles = profiles
        self._clock = clock
        self._cache = GuardedCache(cache)
        self._local: TtlLru[SolvedPlan] = TtlLru(max_entries=local_entries, max_bytes=local_bytes)
        self._local_ttl = min(ttl_s, LOCAL_TTL_S)
        self._codec = PlanCodec()
        self._memo = CanonicalMemo()
        self._pool = pool
        self._metrics = metrics
        self._ttl = ttl_s
        self._time_limit_s = time_limit_s
        self._defaults = defaults or PlanDefaults()
        self._deadline_s = time_limit_s * 4 + 10.0
        self._flights: dict[str, asyncio.Task[SolvedPlan]] = {}

    def held_in_process(self) -> tuple[int, int]:
        """(plans, bytes encoded) this process holds: the in-process plan cache when there is
        no shared one, else the local tier in front of it."""
        inner = self._cache.inner
        if isinstance(inner, MemoryPlanCache):
            return len(inner), inner.size_bytes
        return len(self._local), self._local.size_bytes

    async def solve(
        self, draft: PlanDraft, *, known: Callable[[str], bool] | None = None
    ) -> PlanOutcome:
        """The plan for ``draft``: cached, coalesced with an identical solve, or solved.

        ``known(plan_id)`` true means the caller already holds that plan (an HTTP
        ``If-None-Match``): it is then neither looked up nor solved. Raises the domain's
        ``InvalidInput``/``NotFound`` for a bad draft, ``ServiceUnavailable`` when the catalog
        is unreachable, the solver is full or the solve misses its deadline.
        """
        view = await (
            self._state.as_of(to_utc(draft.as_of, "as_of"))
            if draft.as_of is not None
            else self._state.current()
        )
        revision = view.snapshot.revision
        calibration = (
            await self._profiles.resolve(draft.calibration) if self._profiles is not None else None
        )
        request, pid = self._memo.canonical(
            draft, view.snapshot, self._time_limit_s, self._defaults, calibration
        )
        if known is not None and known(pid):
            return PlanOutcome(pid, revision, view.stale, None, None)
        found, outcome = await self._read(pid)
        self._metrics.cache_lookup(outcome)
        if found is None:
            found = await self._join_or_start(pid, request, view.snapshot)
        return PlanOutcome(pid, revision, view.stale, outcome, found)

    def price_age(self, solved: SolvedPlan) -> PriceAge | None:
        """How old, today, the oldest price ``solved``'s fleet is costed at is, against the
        service's limit (``planner.price_age``: beside the plan, not part of it)."""
        return price_age(solved, self._clock())

    async def lookup(self, plan_id: str) -> SolvedPlan:
        """A plan solved earlier, by id, while its cache entry lives."""
        found, outcome = await self._read(plan_id)
        if found is not None:
            return found
        if outcome == "bypass":
            raise ServiceUnavailable(
                "the plan cache is unreachable; solve the plan's request again",
                retry_after_s=5,
            )
        raise UnknownPlan(plan_id, self._ttl)

    async def close(self) -> None:
        for task in list(self._flights.values()):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._pool.shutdown()

    # ---- internals -------------------------------------------------------------------------

    async def _read(self, pid: str) -> tuple[SolvedPlan | None, CacheOutcome]:
        """The stored plan and ``hit``; else ``None`` and ``miss``, or ``bypass`` when the
        shared cache is unavailable (a local copy still answers then)."""
        held = self._local.get(pid)
        if held is not None:
            return held, "hit"
        try:
            raw = await self._cache.get(plan_key(pid))
        except CacheUnavailable:
            return None, "bypass"
        if raw is None:
            return None, "miss"
        stored = self._codec.decode(raw)
        if stored is None or stored.plan_id != pid:
            return None, "miss"
        self._local.put(pid, stored, size=len(raw), ttl_s=self._local_ttl)
        return stored, "hit"

    async def _join_or_start(
        self, pid: str, request: PlanRequest, snapshot: CatalogSnapshot
    ) -> SolvedPlan:
        task = self._flights.get(pid)
        if task is None:
            # A solve of this plan may have finished (and left the flights) while this caller
            # waited for its cache read: the local tier holds every plan solved here.
            held = self._local.get(pid)
            if held is not None:
                return held
            task = asyncio.create_task(self._solve_and_store(pid, request, snapshot))
            self._flights[pid] = task
            task.add_done_callback(lambda done: self._settle(pid, done))
        try:
            return await asyncio.wait_for(asyncio.shield(task), self._deadline_s)
        except TimeoutError:
            raise ServiceUnavailable(
                f"the solve did not finish within {self._deadline_s:g} s", retry_after_s=5
            ) from None

    def _settle(self, pid: str, task: asyncio.Task[SolvedPlan]) -> None:
        """Forget a finished solve; read its error so a solve nobody waits for any more (its
        callers timed out) is not reported as an unretrieved exception."""
        self._flights.pop(pid, None)
        if not task.cancelled() and task.exception() is not None:
            log.warning("plan solve failed", extra={"event": "solve_failed", "plan_id": pid})

    async def _solve_and_store(
        self, pid: str, request: PlanRequest, snapshot: CatalogSnapshot
    ) -> SolvedPlan:
        def work() -> tuple[SolvedPlan, bytes]:
            started = time.perf_counter()
            result = plan(request, snapshot, executor=self._pool.helpers)
            solved = SolvedPlan(pid, snapshot.revision, request, result)
            encoded = self._codec.encode(solved)
            self._metrics.solve_finished(time.perf_counter() - started)
            return solved, encoded

        solved, encoded = await self._pool.run(work)
        self._local.put(pid, solved, size=len(encoded), ttl_s=self._local_ttl)
        await self._cache.set(plan_key(pid), encoded, self._ttl)
        return solved
