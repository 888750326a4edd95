"""The in-memory catalog snapshot every read and plan is answered from.

Why a snapshot: plans and catalog reads need the whole catalog (a few hundred rows), and
answering them from memory keeps them fast and keeps them working while the database is away.

Freshness rules:
- A write made through this process advances ``known_revision`` before its response is sent,
  so the next read in this process reloads first: once a write's answer is out, no answer from
  this process uses an older revision.
- Other processes' writes are noticed by a background poll of the revision (every
  ``refresh_interval_s``; one indexed single-row read).
- When the database is unreachable, the last snapshot keeps answering and ``stale`` is True;
  with no snapshot at all, ``CatalogUnavailable`` (HTTP 503 with Retry-After).
- Only an outage (``usecases.errors.OUTAGES``: no connection, a timeout) marks the database
  down on a request's path; an error caused by a request's value passes through untouched.
  The background poll reads nothing a request chose, so any failure of it marks it down.
- Circuit breaker: once the database is known to be down (``known_down``), nothing on a
  request's path calls it: reads answer from the snapshot at once, and calls that need the
  database (writes, price history, ``as_of``) answer 503 at once, instead of each waiting
  out the timeout. The background poll is the probe that closes the circuit again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, TypeVar

from service.domain.catalog import CatalogSnapshot
from service.usecases.errors import OUTAGES, ServiceUnavailable, failure_name, with_database

T = TypeVar("T")

log = logging.getLogger("gpuplan.catalog")

_AS_OF_CACHE = 32
_AS_OF_NEEDS_DATABASE = "prices as of a past moment need the catalog database, which is unreachable"


class SnapshotSource(Protocol):
    """What the catalog state reads (``store.repositories.CatalogRepository`` in the service)."""

    async def snapshot(self, as_of: datetime | None = None) -> CatalogSnapshot: ...

    async def revision(self) -> int: ...


class CatalogUnavailable(ServiceUnavailable):
    """The database is unreachable and no snapshot has been loaded yet."""


@dataclass(frozen=True, slots=True)
class SnapshotView:
    snapshot: CatalogSnapshot
    stale: bool


class CatalogState:
    """The snapshot this process answers from, kept fresh by the rules in the module docstring.

    ``on_load`` runs after each snapshot is loaded (the server settles its heap there:
    ``service.heap``)."""

    def __init__(
        self,
        repo: SnapshotSource,
        *,
        refresh_interval_s: float = 1.0,
        timeout_s: float = 2.0,
        on_load: Callable[[], None] | None = None,
    ) -> None:
        self._repo = repo
        self._on_load = on_load
        self._interval = refresh_interval_s
        self._timeout = timeout_s
        self._snapshot: CatalogSnapshot | None = None
        self._known_revision = -1
        self._database_ok = False
        self._last_error: str | None = None
        self._reload_lock = asyncio.Lock()
        self._as_of: OrderedDict[tuple[int, datetime], CatalogSnapshot] = OrderedDict()
        self._task: asyncio.Task[None] | None = None
        self._stopping = False

    # ---- lifecycle ---------------------------------------------------------------------

    async def start(self) -> None:
        """Load the first snapshot (a failure is logged, not raised) and start polling."""
        try:
            await self._reload()
        except Exception as exc:  # noqa: BLE001 - any driver error means "not loaded yet"
            self._mark_down(exc)
        self._task = asyncio.create_task(self._poll_forever(), name="catalog-refresh")

    async def stop(self) -> None:
        """End the poll. The flag ends it even when the cancellation is lost: on Python 3.11
        ``asyncio.wait_for`` drops a cancel that arrives as its inner call completes, and the
        poll would go on (and shutdown wait for it) for ever."""
        if self._task is not None:
            self._stopping = True
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    # ---- queries -----------------------------------------------------------------------

    @property
    def database_ok(self) -> bool:
        return self._database_ok

    @property
    def last_error(self) -> str | None:
        return self._last_error

    @property
    def known_down(self) -> bool:
        """True from a failure seen by a call or the poll until the poll reaches the database
        again (before the first attempt nothing is known: calls go through)."""
        return not self._database_ok and self._last_error is not None

    @property
    def loaded_revision(self) -> int | None:
        return None if self._snapshot is None else self._snapshot.revision

    async def current(self) -> SnapshotView:
        """The newest snapshot this process knows of (reloading first when a newer revision
        is known), or the last one marked stale when the database cannot be reached."""
        snapshot = self._snapshot
        if snapshot is None or snapshot.revision < self._known_revision:
            if self.known_down:
                return self._last_known()
            try:
                snapshot = await self._reload()
            except OUTAGES as exc:
                self._mark_down(exc)
                return self._last_known()
        return SnapshotView(snapshot, stale=not self._database_ok)

    def _last_known(self) -> SnapshotView:
        """The last snapshot, stale; ``CatalogUnavailable`` when none was ever loaded."""
        if self._snapshot is None:
            raise CatalogUnavailable(
                "the catalog database is unreachable and no catalog is loaded yet"
            )
        return SnapshotView(self._snapshot, stale=True)

    async def as_of(self, moment: datetime) -> SnapshotView:
        """The catalog with prices as they were known at ``moment`` (GPU specs are current)."""
        view = await self.current()
        key = (view.snapshot.revision, moment)
        cached = self._as_of.get(key)
        if cached is not None:
            self._as_of.move_to_end(key)
            return SnapshotView(cached, view.stale)
        if self.known_down:
            raise CatalogUnavailable(_AS_OF_NEEDS_DATABASE)
        try:
            snapshot = await asyncio.wait_for(self._repo.snapshot(as_of=moment), self._timeout)
        except OUTAGES as exc:  # a refused moment (InvalidInput) is the caller's, not an outage
            self._mark_down(exc)
            raise CatalogUnavailable(_AS_OF_NEEDS_DATABASE) from exc
        self._as_of[key] = snapshot
        while len(self._as_of) > _AS_OF_CACHE:
            self._as_of.popitem(last=False)
        return SnapshotView(snapshot, stale=False)

    def report_failure(self, exc: BaseException) -> None:
        """Any caller that saw the database fail reports it, so answers are marked stale at
        once rather than at the next poll (the poll marks it reachable again)."""
        self._mark_down(exc)

    async def call_database(
        self, call: Callable[[], Awaitable[T]], timeout_s: float, what: str
    ) -> T:
        """A repository call under the timeout; an outage is reported here (answers turn stale
        at once) and becomes ``ServiceUnavailable``. While the database is known to be down the
        call is not made: ``ServiceUnavailable`` at once."""
        if self.known_down:
            raise ServiceUnavailable(f"{what}: the catalog database is unreachable")
        try:
            return await with_database(call(), timeout_s, what)
        except ServiceUnavailable as exc:
            self.report_failure(exc)
            raise

    def advance(self, revision: int) -> None:
        """Record that the catalog reached ``revision`` (called right after a committed write)."""
        self._known_revision = max(self._known_revision, revision)

    # ---- internals ---------------------------------------------------------------------

    async def _reload(self) -> CatalogSnapshot:
        async with self._reload_lock:
            held = self._snapshot
            if held is not None and held.revision >= self._known_revision and self._database_ok:
                return held
            snapshot = await asyncio.wait_for(self._repo.snapshot(), self._timeout)
            self._snapshot = snapshot
            self._known_revision = max(self._known_revision, snapshot.revision)
            self._mark_up()
            if self._on_load is not None:
                self._on_load()
            return snapshot

    async def _poll_forever(self) -> None:
        while not self._stopping:
            await asyncio.sleep(self._interval)
            if not self._stopping:
                await self.poll_once()

    async def poll_once(self) -> None:
        """One refresh step: read the revision; reload if it moved; track database health."""
        try:
            revision = await asyncio.wait_for(self._repo.revision(), self._timeout)
            self.advance(revision)
            self._mark_up()
            if self._snapshot is None or self._snapshot.revision < revision:
                await self._reload()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001
            self._mark_down(exc)

    def _mark_up(self) -> None:
        if not self._database_ok:
            log.info("catalog database reachable", extra={"event": "database_up"})
        self._database_ok = True
        self._last_error = None

    def _mark_down(self, exc: BaseException) -> None:
        why = failure_name(exc)
        if self._database_ok or self._last_error is None:
            log.warning(
                "catalog database unreachable; answering from the last snapshot",
                extra={"event": "database_down", "error": why},
            )
        self._database_ok = False
        self._last_error = why
