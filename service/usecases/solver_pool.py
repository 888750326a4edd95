"""Worker threads for CPU-bound solves, off the event loop and under a cap.

At most ``workers`` solves run and ``queue`` wait; one more is refused at once with
``ServiceUnavailable`` (HTTP 503 + Retry-After) instead of joining an ever-growing backlog.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol, TypeVar

from service.usecases.errors import ServiceUnavailable

T = TypeVar("T")


class SolverGauges(Protocol):
    """Where the pool reports its load (the service's metrics, or nothing)."""

    def solver_load(self, running: int, queued: int) -> None: ...


class SolverPool:
    """Worker threads for CPU-bound solves, at most ``workers`` running and ``queue`` waiting."""

    def __init__(self, workers: int, queue: int, gauges: SolverGauges) -> None:
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="solver")
        # Each running solve overlaps its single-type solves with its own (one helper job per
        # plan, see planner.plan); HiGHS releases the GIL, so on several cores a plan finishes
        # sooner.
        self.helpers = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="solver-aux")
        self._workers = workers
        self._limit = workers + queue
        self._admitted = 0
        self._gauges = gauges

    @property
    def queued(self) -> int:
        return max(self._admitted - self._workers, 0)

    @property
    def running(self) -> int:
        return min(self._admitted, self._workers)

    async def run(self, fn: Callable[[], T]) -> T:
        """``fn()`` in a worker thread; ``ServiceUnavailable`` when the pool is full."""
        if self._admitted >= self._limit:
            raise ServiceUnavailable(
                f"the planner is at capacity ({self._admitted} solves admitted); retry shortly",
                retry_after_s=1,
            )
        self._admitted += 1
        self._report()
        try:
            return await asyncio.get_running_loop().run_in_executor(self._executor, fn)
        finally:
            self._admitted -= 1
            self._report()

    def _report(self) -> None:
        self._gauges.solver_load(self.running, self.queued)

    def shutdown(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
        self.helpers.shutdown(wait=False, cancel_futures=True)
